// The svc console: plain DOM over the REST API (docs/svc-console.md). Every value from the
// database is put on the page as text, never as HTML.
const $ = (sel) => document.querySelector(sel)
const PAGE = 50
const state = {branch: 'main', cursor: undefined, order: 'asc', pages: [], writable: true}

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v)
    else node.setAttribute(k, v)
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(String(c)))
  return node
}

async function api(path, options = {}) {
  const url = new URL(path, location.origin)
  if (state.branch !== 'main' && !url.searchParams.has('branch')) url.searchParams.set('branch', state.branch)
  const res = await fetch(url, {headers: {'content-type': 'application/json'}, ...options})
  const text = await res.text()
  const body = text ? JSON.parse(text) : null
  if (!res.ok) throw new Error(body?.error?.message ?? `HTTP ${res.status}`)
  return body
}

function showError(error) {
  $('#error').textContent = error ? String(error.message ?? error) : ''
}

const guarded = (fn) => async (...args) => {
  showError(null)
  try {
    await fn(...args)
  } catch (error) {
    showError(error)
  }
}

const docPath = (id, suffix = '') => `/api/v1/documents/${encodeURIComponent(id)}${suffix}`
const pretty = (v) => JSON.stringify(v, null, 2)

// --- documents ---------------------------------------------------------------------------------

async function loadTables() {
  const {tables} = await api('/api/v1/tables')
  const select = $('#table')
  select.replaceChildren(el('option', {value: ''}, '(all tables)'), ...tables.map((t) => el('option', {value: t.name}, `${t.name} (${t.documents})`)))
}

/** Numbers each loadPage call, so only the last one asked renders (see there). */
let pageAsked = 0

async function loadPage(cursor) {
  const asked = ++pageAsked
  const q = new URLSearchParams({limit: String(PAGE)})
  if ($('#table').value) q.set('table', $('#table').value)
  if ($('#prefix').value) q.set('prefix', $('#prefix').value)
  if (cursor) q.set('cursor', cursor)
  if (state.order === 'desc') q.set('order', 'desc')
  // "As of": the table as it stood at that commit or time, listed by the server from that tree.
  const asOf = $('#asof').value.trim()
  if (asOf) q.set(/^[0-9a-f]{4,40}$/.test(asOf) ? 'commit' : 'time', asOf)
  const page = await api(`/api/v1/documents?${q}`)
  // Answers can arrive out of order (a table chosen while the first page still loads): an older
  // one must not replace the list the user asked for since.
  if (asked !== pageAsked) return
  state.cursor = page.nextCursor
  $('#next-page').disabled = !page.nextCursor
  const docs = page.documents
  $('#doc-list tbody').replaceChildren(
    ...docs.map((d) =>
      el(
        'tr',
        {class: 'doc-row', tabindex: '0', 'data-id': d.id, onclick: () => openDoc(d.id), onkeydown: (e) => e.key === 'Enter' && openDoc(d.id)},
        el('td', {}, d.id),
        el('td', {class: 'fields'}, Object.keys(d).filter((k) => k !== 'id').slice(0, 4).join(', ')),
      ),
    ),
  )
  if (docs.length === 0) $('#doc-list tbody').replaceChildren(el('tr', {}, el('td', {colspan: '2', class: 'muted'}, 'No documents')))
}

async function openDoc(id) {
  const view = $('#doc-view')
  const [doc, history] = await Promise.all([api(docPath(id)).catch(() => null), api(`${docPath(id, '/history')}?limit=50`).catch(() => ({versions: []}))])
  const versions = history.versions
  const shown = el('pre', {id: 'doc-json', tabindex: '0', 'aria-label': `Document ${id}`}, doc ? pretty(doc) : '(deleted)')
  const from = el('select', {id: 'diff-from', 'aria-label': 'Diff from version'}, versions.map((v) => el('option', {value: v.commit}, `${v.commit.slice(0, 8)} ${v.time}`)))
  const to = el('select', {id: 'diff-to', 'aria-label': 'Diff to version'}, versions.map((v) => el('option', {value: v.commit}, `${v.commit.slice(0, 8)} ${v.time}`)))
  if (versions.length > 1) from.selectedIndex = 1
  const diffOut = el('div', {id: 'diff', class: 'diff'})
  const timeline = el(
    'ol',
    {class: 'timeline', 'aria-label': 'History'},
    versions.map((v) =>
      el(
        'li',
        {},
        el('code', {}, v.commit.slice(0, 8)),
        ` ${v.time} · ${v.op} · ${v.meta?.user ?? v.meta?.origin ?? 'unknown'} `,
        el('button', {type: 'button', onclick: () => (shown.textContent = v.doc ? pretty(v.doc) : '(deleted)')}, 'View'),
      ),
    ),
  )
  view.replaceChildren(
    el('h2', {}, id),
    shown,
    editor(id, doc),
    el('h2', {}, `History (${versions.length}${history.nextCursor ? '+' : ''})`),
    timeline,
    el('h2', {}, 'Diff'),
    el('div', {class: 'toolbar'}, el('label', {}, 'From ', from), el('label', {}, 'To ', to), el('button', {type: 'button', id: 'show-diff', onclick: guarded(() => showDiff(id, from.value, to.value, diffOut))}, 'Show diff')),
    diffOut,
  )
}

async function showDiff(id, from, to, out) {
  const {changes} = await api(`${docPath(id, '/diff')}?from=${from}&to=${to}`)
  if (changes.length === 0) {
    out.replaceChildren(el('p', {class: 'muted'}, 'No changes'))
    return
  }
  out.replaceChildren(
    el(
      'table',
      {'aria-label': 'Changes'},
      el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Path'), el('th', {scope: 'col'}, 'Before'), el('th', {scope: 'col'}, 'After'))),
      el(
        'tbody',
        {},
        changes.map((c) =>
          el('tr', {}, el('td', {}, c.path), el('td', {class: 'del'}, c.before === undefined ? '' : pretty(c.before)), el('td', {class: 'add'}, c.after === undefined ? '' : pretty(c.after))),
        ),
      ),
    ),
  )
}

function editor(id, doc) {
  if (!state.writable) return el('p', {class: 'muted'}, 'Read-only: this server does not accept writes.')
  const area = el('textarea', {id: 'doc-edit', rows: '8', 'aria-label': 'Edit document JSON'})
  area.value = doc ? pretty(doc) : '{}'
  const save = guarded(async () => {
    await api(docPath(id), {body: area.value, method: 'PUT'})
    await openDoc(id)
    await loadPage()
  })
  const remove = guarded(async () => {
    await api(docPath(id), {method: 'DELETE'})
    await openDoc(id)
    await loadPage()
  })
  return el('details', {}, el('summary', {}, 'Edit'), area, el('button', {type: 'button', id: 'save-doc', onclick: save}, 'Save'), ' ', el('button', {type: 'button', id: 'delete-doc', onclick: remove}, 'Delete'))
}

// --- search, SQL, status -------------------------------------------------------------------------

function highlighted(text, terms) {
  if (terms.length === 0) return [text]
  const re = new RegExp(`(${terms.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`, 'gi')
  return text.split(re).map((part, i) => (i % 2 === 1 ? el('mark', {}, part) : part))
}

async function search(event) {
  event.preventDefault()
  const q = $('#q').value
  const result = await api(`/api/v1/search?q=${encodeURIComponent(q)}&limit=20`)
  const terms = q.split(/\s+/).map((t) => t.replace(/[^\p{L}\p{N}]/gu, '')).filter((t) => t.length > 0)
  $('#search-total').textContent = `${result.total} matching document${result.total === 1 ? '' : 's'}`
  $('#search-hits').replaceChildren(
    ...result.hits.map((h) => {
      const text = Object.entries(h.doc).filter(([k, v]) => k !== 'id' && typeof v === 'string').map(([k, v]) => `${k}: ${v}`).join(' · ')
      return el('li', {}, el('a', {href: '#', onclick: (e) => (e.preventDefault(), showTab('documents'), openDoc(h.id))}, h.id), ' ', el('span', {class: 'snippet'}, highlighted(text.slice(0, 300), terms)))
    }),
  )
}

async function runSql(event) {
  event.preventDefault()
  const r = await api('/api/v1/query', {body: JSON.stringify({sql: $('#sql-text').value}), method: 'POST'})
  const columns = r.columns.map((c) => (typeof c === 'string' ? c : c.name))
  $('#sql-result').replaceChildren(
    el('p', {class: 'muted'}, r.command ?? ''),
    el('table', {id: 'sql-table', 'aria-label': 'Query result'}, el('thead', {}, el('tr', {}, columns.map((c) => el('th', {scope: 'col'}, c)))), el('tbody', {}, r.rows.map((row) => el('tr', {}, row.map((v) => el('td', {}, v === null ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v))))))),
  )
}

/** HTTP requests by route from the metrics text: {'GET /api/v1/documents': 12, ...}. */
function requestCounts(metrics) {
  const counts = {}
  for (const line of metrics.split('\n')) {
    const m = /^svc_http_requests_total\{([^}]*)\} (\S+)$/.exec(line)
    if (!m) continue
    const label = (name) => new RegExp(`${name}="([^"]*)"`).exec(m[1])?.[1] ?? ''
    const key = `${label('method')} ${label('route')}`
    counts[key] = (counts[key] ?? 0) + Number(m[2])
  }
  return counts
}

/** Requests per second between two samples of the counters, busiest routes first. */
function rates(before, after, seconds) {
  return Object.entries(after)
    .map(([route, n]) => [route, (n - (before.counts[route] ?? 0)) / seconds])
    .filter(([, r]) => r > 0)
    .sort((a, b) => b[1] - a[1])
}

/**
 * The status tab's own requests, by route ('GET /health': 3): its polling is not the users'
 * traffic, so the rates leave these out. Counted once answered; the server counts a request as it
 * sends the answer, so every request counted here is in the counters read after it.
 */
const ownRequests = {}

async function ownFetch(path) {
  const res = await fetch(path)
  ownRequests[`GET ${path}`] = (ownRequests[`GET ${path}`] ?? 0) + 1
  return res
}

async function loadStatus() {
  const health = await ownFetch('/health').then((r) => r.json())
  // Taken before the /metrics request: that one is in the counters only from the next sample on.
  const mine = {...ownRequests}
  const metrics = await ownFetch('/metrics').then((r) => r.text())
  const wanted = /^(svc_wal_pending|svc_index|svc_documents|svc_http_requests_total|svc_commits|process_resident_memory_bytes)/
  const lines = metrics.split('\n').filter((l) => wanted.test(l))
  const counts = requestCounts(metrics)
  for (const [route, n] of Object.entries(mine)) counts[route] = (counts[route] ?? 0) - n
  const sample = {at: Date.now(), counts}
  const previous = state.requestSample
  state.requestSample = sample
  let rateView
  if (!previous) rateView = el('p', {class: 'muted', id: 'request-rates'}, 'Request rates: measuring (the tab refreshes every 2 s)')
  else {
    const seconds = Math.max(0.001, (sample.at - previous.at) / 1000)
    const perRoute = rates(previous, sample.counts, seconds)
    const total = perRoute.reduce((sum, [, r]) => sum + r, 0)
    rateView = el(
      'div',
      {id: 'request-rates'},
      el('p', {}, `HTTP requests: ${total.toFixed(1)}/s over the last ${seconds.toFixed(1)} s`),
      el('table', {'aria-label': 'Request rates by route'}, el('thead', {}, el('tr', {}, el('th', {scope: 'col'}, 'Route'), el('th', {scope: 'col'}, 'Requests/s'))), el('tbody', {}, perRoute.map(([route, r]) => el('tr', {}, el('td', {}, route), el('td', {}, r.toFixed(1)))))),
    )
  }
  $('#status-body').replaceChildren(
    el('h2', {}, `Health: ${health.status ?? 'unknown'}`),
    el('pre', {id: 'health-json'}, pretty(health)),
    el('h2', {}, 'Request rates'),
    rateView,
    el('h2', {}, 'Metrics'),
    el('pre', {id: 'metrics-lines'}, lines.join('\n') || '(none)'),
  )
}

function showTab(name) {
  for (const b of document.querySelectorAll('nav button')) b.setAttribute('aria-pressed', String(b.dataset.tab === name))
  for (const s of document.querySelectorAll('main > section')) s.hidden = s.id !== name
  // One refresh at a time, 2 s after the last answer; rates start afresh on each visit.
  clearTimeout(state.statusTimer)
  state.requestSample = undefined
  if (name === 'status') {
    const refresh = async () => {
      await guarded(loadStatus)()
      if (!$('#status').hidden) state.statusTimer = setTimeout(refresh, 2000)
    }
    refresh()
  }
}

async function start() {
  const {branches} = await api('/api/v1/branches')
  $('#branch').replaceChildren(...branches.map((b) => el('option', {value: b.name}, b.name)))
  $('#branch').value = state.branch
  state.writable = document.body.dataset.writable !== 'false'
  await loadTables()
  await loadPage()
}

for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => showTab(b.dataset.tab))
$('#branch').addEventListener('change', guarded(async () => {
  state.branch = $('#branch').value
  await loadTables()
  await loadPage()
}))
$('#table').addEventListener('change', guarded(() => loadPage()))
$('#prefix').addEventListener('input', guarded(() => loadPage()))
$('#asof').addEventListener('change', guarded(() => loadPage()))
$('#next-page').addEventListener('click', guarded(() => loadPage(state.cursor)))
// The server pages in either id order (a cursor continues in it), so a reversed table of 100k
// documents still starts at its last id instead of sorting one page.
$('#sort-id').addEventListener('click', guarded(async () => {
  state.order = state.order === 'asc' ? 'desc' : 'asc'
  $('#id-header').setAttribute('aria-sort', state.order === 'asc' ? 'ascending' : 'descending')
  $('#sort-id').textContent = `Id ${state.order === 'asc' ? '\u25B2' : '\u25BC'}`
  await loadPage()
}))
$('#first-page').addEventListener('click', guarded(() => loadPage()))
$('#new-doc').addEventListener('click', guarded(async () => {
  const id = prompt('New document id (table:key)')
  if (id) await openDoc(id)
}))
$('#search-form').addEventListener('submit', guarded(search))
$('#sql-form').addEventListener('submit', guarded(runSql))
guarded(start)()
