import type {Issue, Workspace} from '../types.js'

export interface UrlResult {
  /** Where the URL led after redirects, when it differs. */
  final_url: null | string
  ok: boolean
  reason: null | string
  /** HTTP status after redirects; null when the request failed. */
  status: null | number
  url: string
}

/** Every distinct final URL of the account, in the order it first appears. */
export function finalUrls(ws: Workspace): string[] {
  const urls = new Set<string>()
  for (const c of ws.account.campaigns) {
    for (const g of c.ad_groups) {
      urls.add(g.final_url)
      for (const ad of g.ads) urls.add(ad.final_url)
      for (const k of g.keywords) if (k.final_url) urls.add(k.final_url)
    }
    for (const g of c.asset_groups) urls.add(g.final_url)
  }
  return [...urls].filter((u) => u !== '')
}

/**
 * Checks URLs `concurrency` at a time. HEAD first (cheap); servers that refuse HEAD (405/501)
 * get a GET. Redirects are followed. Each request has its own timeout.
 */
export async function checkUrls(urls: string[], opts: {concurrency: number; onResult: (r: UrlResult) => void; timeoutMs: number}): Promise<UrlResult[]> {
  const results: UrlResult[] = new Array(urls.length)
  let next = 0
  const worker = async () => {
    while (next < urls.length) {
      const i = next++
      results[i] = await checkOne(urls[i], opts.timeoutMs)
      opts.onResult(results[i])
    }
  }
  await Promise.all(Array.from({length: Math.min(opts.concurrency, urls.length)}, worker))
  return results
}

async function checkOne(url: string, timeoutMs: number): Promise<UrlResult> {
  const attempt = async (method: 'GET' | 'HEAD') => {
    const res = await fetch(url, {headers: {'user-agent': 'toolkit-campaign-url-check/1'}, method, redirect: 'follow', signal: AbortSignal.timeout(timeoutMs)})
    await res.body?.cancel().catch(() => {})
    return res
  }
  try {
    let res = await attempt('HEAD')
    if (res.status === 405 || res.status === 501) res = await attempt('GET')
    const ok = res.status >= 200 && res.status < 300
    return {final_url: res.url && !samePage(res.url, url) ? res.url : null, ok, reason: ok ? null : `HTTP ${res.status}`, status: res.status, url}
  } catch (error) {
    const e = error as {cause?: {code?: string; message?: string}; message?: string; name?: string}
    const reason = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.cause?.message ?? e.message ?? 'request failed')
    return {final_url: null, ok: false, reason, status: null, url}
  }
}

/** Broken and unreachable final URLs are errors: Google Ads disapproves ads whose page does not work. */
export function urlIssues(results: UrlResult[]): Issue[] {
  return results.flatMap((r): Issue[] => {
    if (r.ok) return r.final_url ? [{code: 'url_redirected', message: `${r.url} redirects to ${r.final_url}`, path: r.url, severity: 'warning'}] : []
    if (r.status === null) return [{code: 'url_unreachable', message: `${r.url}: ${r.reason}`, path: r.url, severity: 'error'}]
    return [{code: 'url_broken', message: `${r.url} answers HTTP ${r.status}`, path: r.url, severity: 'error'}]
  })
}

/**
 * Whether two addresses name the same page: `https://shop.example` and `https://shop.example/`
 * are one (the URL standard gives a bare host the path `/`), as are differences the parser
 * normalises away (case of the host, a default port).
 */
export function samePage(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href
  } catch {
    return a === b
  }
}
