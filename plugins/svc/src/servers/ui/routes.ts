/**
 * The svc console at `/ui`: three static files from the plugin package's `ui/` folder (no build
 * step), served with validators and caching headers. The page itself only calls the REST API.
 */
import {createHash} from 'node:crypto'
import {existsSync, readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

import type {RestReply, RestRequest, Route} from '../rest/router.js'

export interface UiOptions {
  /** A follower (or any server that refuses writes): the page offers no edits. */
  readOnly: boolean
}

interface Asset {
  body: Buffer
  etag: string
  type: string
}

const TYPES: Record<string, string> = {
  'app.css': 'text/css; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'index.html': 'text/html; charset=utf-8',
}

/** The package's `ui/` folder, found from this module whether it runs bundled (dist/) or from src/. */
function uiDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'ui', 'index.html'))) return join(dir, 'ui')
    dir = dirname(dir)
  }
  throw new Error('the svc console files (ui/index.html) are missing from the package')
}

function loadAssets(options: UiOptions): Map<string, Asset> {
  const dir = uiDir()
  const assets = new Map<string, Asset>()
  for (const [name, type] of Object.entries(TYPES)) {
    let body = readFileSync(join(dir, name))
    if (name === 'index.html') body = Buffer.from(body.toString('utf8').replace('<body>', `<body data-writable="${!options.readOnly}">`))
    assets.set(name, {body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, type})
  }
  return assets
}

export function uiRoutes(options: UiOptions): Route[] {
  const assets = loadAssets(options)
  const serve = (name: string, r: RestRequest): RestReply => {
    const asset = assets.get(name)
    if (!asset) return {json: {error: {code: 'not_found', message: `no console file ${name}`}}, status: 404}
    const res = r.res
    res.setHeader('etag', asset.etag)
    // The page is revalidated each time (so an upgrade shows at once); its script and style for an hour.
    res.setHeader('cache-control', name === 'index.html' ? 'no-cache' : 'public, max-age=3600')
    res.setHeader('x-content-type-options', 'nosniff')
    if (name === 'index.html') res.setHeader('content-security-policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
    if (r.raw.headers['if-none-match'] === asset.etag) return {body: '', status: 304, type: asset.type}
    return {body: asset.body, type: asset.type}
  }
  return [
    {handler: (r) => serve('index.html', r), methods: ['GET'], path: '/ui'},
    {handler: (r) => serve(r.params.file, r), methods: ['GET'], path: '/ui/:file'},
  ]
}
