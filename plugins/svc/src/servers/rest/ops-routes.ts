import {createWriteStream, mkdirSync, realpathSync, rmSync} from 'node:fs'
import type {IncomingMessage} from 'node:http'
import {basename, dirname, join, resolve, sep} from 'node:path'
import {pipeline} from 'node:stream/promises'

import type {Engine} from '../../engine/types.js'
import {EngineError} from '../../engine/errors.js'
import {backupDataDir} from '../../ops/backup.js'
import {compactEngine} from '../../ops/compact.js'
import type {BackupFormat} from '../../ops/manifest.js'
import {ownServerLink, TOKEN_HEADER, tokenMatches} from '../../ops/server-link.js'
import {exportSnapshotFrom, importSnapshotLive} from '../../ops/snapshot.js'
import {opsTempDir} from '../../ops/stage.js'
import {HttpError, type RestContext, type RestReply, type RestRequest, type Route} from './router.js'

/** Largest snapshot upload accepted. */
const UPLOAD_LIMIT = 16 * 1024 * 1024 * 1024

/**
 * `POST /api/v1/backup|export|restore|import`. Files are written only inside the configured
 * backup directory (`:backup {:dir ...}`, default `backups/` beside the data directory), unless
 * the caller sends the data directory's ops token (the local CLI; see ops/server-link.ts).
 * Restore replaces the database and is refused on a running server; import adds new branches.
 */
export function opsRoutes({engine}: RestContext): Route[] {
  const trusted = (r: RestRequest): boolean => tokenMatches(header(r.raw, TOKEN_HEADER))

  const backup = async (r: RestRequest): Promise<RestReply> => {
    const body = await objectBody(r)
    const output = allowedOutput(body.output, trusted(r))
    const baseCommit = body.base_commit ?? body.baseCommit
    if (baseCommit !== undefined && baseCommit !== null && typeof baseCommit !== 'string') throw new HttpError(400, 'invalid_argument', '"base_commit" must be a commit id')
    if (body.format !== undefined && typeof body.format !== 'string') throw new HttpError(400, 'invalid_argument', '"format" must be "tar.gz" or "bundle"')
    return {json: await backupDataDir(engine, {baseCommit: baseCommit ?? undefined, format: (body.format ?? 'tar.gz') as BackupFormat, output}), status: 201}
  }

  const exportSnapshot = async (r: RestRequest): Promise<RestReply> => {
    const body = await objectBody(r)
    const output = allowedOutput(body.output, trusted(r))
    if (body.refs !== undefined && (!Array.isArray(body.refs) || body.refs.some((x) => typeof x !== 'string'))) throw new HttpError(400, 'invalid_argument', '"refs" must be an array of branch names')
    return {json: await exportSnapshotFrom(engine, {output, refs: body.refs as string[] | undefined}), status: 201}
  }

  const restore = (r: RestRequest): RestReply => {
    r.raw.resume()
    throw new HttpError(409, 'conflict', 'a restore replaces the whole database and is refused while the server runs: stop the server and run toolkit svc restore --input FILE --data-dir DIR (a new directory, or --force to keep the old one aside)')
  }

  const importSnapshot = async (r: RestRequest): Promise<RestReply> => {
    if ((header(r.raw, 'content-type') ?? '').startsWith('multipart/form-data')) {
      const upload = await receiveUpload(engine, r.raw)
      try {
        return {json: {...(await importSnapshotLive(engine, {input: upload.file, verify: upload.verify})), input: upload.name}}
      } finally {
        upload.remove()
      }
    }
    if (!trusted(r)) throw new HttpError(400, 'invalid_argument', 'send the snapshot as multipart/form-data with a "file" part (and optionally "verify")')
    const body = (await r.json()) as {input?: unknown; verify?: unknown}
    if (typeof body?.input !== 'string') throw new HttpError(400, 'invalid_argument', 'send {"input": "<bundle path>"}')
    return {json: await importSnapshotLive(engine, {input: body.input, verify: body.verify === true})}
  }

  // The CLI's compact and remove-branch reach a running server here (with the ops token).
  const compact = async (r: RestRequest): Promise<RestReply> => {
    if (!trusted(r)) throw new HttpError(403, 'forbidden', 'compaction is started by toolkit svc compact on the server machine')
    return {json: await compactEngine(engine)}
  }

  const removeBranch = async (r: RestRequest): Promise<RestReply> => {
    const body = (await r.json()) as {name?: unknown}
    if (typeof body?.name !== 'string') throw new HttpError(400, 'invalid_argument', 'send {"name": "<branch>"}')
    const head = (await engine.branches()).find((b) => b.name === body.name)?.head ?? null
    await engine.removeBranch(body.name)
    return {json: {dataDir: engine.dataDir, head, name: body.name, removed: true}}
  }

  return [
    {handler: compact, methods: ['POST'], path: '/api/v1/compact'},
    {handler: removeBranch, methods: ['POST'], path: '/api/v1/remove-branch'},
    {handler: backup, methods: ['POST'], path: '/api/v1/backup'},
    {handler: exportSnapshot, methods: ['POST'], path: '/api/v1/export'},
    {handler: restore, methods: ['POST'], path: '/api/v1/restore'},
    {handler: importSnapshot, methods: ['POST'], path: '/api/v1/import'},
  ]
}

async function objectBody(r: RestRequest): Promise<Record<string, unknown> & {output: string}> {
  const body = (await r.json()) as Record<string, unknown> | null
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'invalid_argument', 'send a JSON object')
  if (typeof body.output !== 'string' || body.output === '') throw new HttpError(400, 'invalid_argument', 'send {"output": "<file path>", ...}')
  return body as Record<string, unknown> & {output: string}
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

/** The output path; a 403 when an untrusted caller names a place outside the backup directory. */
function allowedOutput(given: string, trusted: boolean): string {
  if (trusted) return resolve(given)
  const backupDir = ownServerLink()?.backupDir ?? resolve('backups')
  const out = resolve(backupDir, given)
  const outside = new HttpError(403, 'forbidden', `output ${given} is outside the backup directory ${backupDir}; name a file inside it (a relative path is taken inside it)`)
  if (!out.startsWith(`${backupDir}${sep}`)) throw outside
  mkdirSync(dirname(out), {recursive: true})
  // Checked again after symlinks are resolved, so a link inside the backup directory cannot lead out of it.
  const root = realpathSync(backupDir)
  const parent = realpathSync(dirname(out))
  if (parent !== root && !parent.startsWith(`${root}${sep}`)) throw outside
  return join(parent, basename(out))
}

/** Streams the multipart `file` part to a temporary file in the data directory. */
async function receiveUpload(engine: Engine, req: IncomingMessage): Promise<{file: string; name: string; remove(): void; verify: boolean}> {
  const {default: busboy} = await import('busboy')
  const dir = opsTempDir(engine.dataDir, 'upload')
  const remove = (): void => rmSync(dir, {force: true, recursive: true})
  const file = join(dir, 'upload')
  try {
    let got = false
    let verify = false
    let name = 'upload'
    let writing: Promise<void> | undefined
    const bb = busboy({headers: req.headers, limits: {fileSize: UPLOAD_LIMIT, files: 1}})
    bb.on('file', (field, stream, info) => {
      if (field !== 'file') {
        stream.resume()
        return
      }
      got = true
      name = info.filename || name
      writing = pipeline(stream, createWriteStream(file))
    })
    bb.on('field', (name, value) => {
      if (name === 'verify') verify = value === '' || value === 'true' || value === '1' || value === 'on'
    })
    await pipeline(req, bb)
    await writing
    if (!got) throw new EngineError('invalid_argument', 'the multipart body has no "file" part')
    return {file, name, remove, verify}
  } catch (error) {
    remove()
    throw error
  }
}
