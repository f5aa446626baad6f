import {createWriteStream, mkdirSync, realpathSync, rmSync} from 'node:fs'
import type {IncomingMessage} from 'node:http'
import {basename, dirname, join, resolve, sep} from 'node:path'
import {pipeline} from 'node:stream/promises'

import {readBody} from '@toolkit/kit'

import type {GitEngine} from '../../engine/engine.js'
import {EngineError} from '../../engine/errors.js'
import {backupDataDir} from '../../ops/backup.js'
import type {BackupFormat} from '../../ops/manifest.js'
import {ownServerLink, TOKEN_HEADER, tokenMatches} from '../../ops/server-link.js'
import {exportSnapshotFrom, importSnapshotLive} from '../../ops/snapshot.js'
import {opsTempDir} from '../../ops/stage.js'

/** An answer of an ops route: the REST server sends it as JSON. */
export interface OpsReply {
  body: unknown
  status: number
}

const UPLOAD_LIMIT = 16 * 1024 * 1024 * 1024

function refuse(status: number, code: string, message: string): OpsReply {
  return {body: {error: {code, message}}, status}
}

/**
 * `POST /api/v1/backup|export|restore|import`. Files are written only inside the configured
 * backup directory (`:backup {:dir ...}`, default `backups/` beside the data directory), unless
 * the caller sends the data directory's ops token (the local CLI; see ops/server-link.ts).
 * Restore replaces the database and is refused on a running server; import adds new branches.
 */
export async function opsRoute(engine: GitEngine, req: IncomingMessage, resource: string): Promise<OpsReply | undefined> {
  if (!['backup', 'export', 'import', 'restore'].includes(resource)) return undefined
  if (req.method !== 'POST') return refuse(405, 'method_not_allowed', `method ${req.method} is not allowed here; use POST`)
  const trusted = tokenMatches(header(req, TOKEN_HEADER))
  if (resource === 'restore') {
    req.resume()
    return refuse(409, 'conflict', 'a restore replaces the whole database and is refused while the server runs: stop the server and run toolkit svc restore --input FILE --data-dir DIR (a new directory, or --force to keep the old one aside)')
  }
  if (resource === 'import') {
    const type = header(req, 'content-type') ?? ''
    if (type.startsWith('multipart/form-data')) {
      const upload = await receiveUpload(engine, req)
      try {
        return {body: await importSnapshotLive(engine, {input: upload.file, verify: upload.verify}), status: 200}
      } finally {
        upload.remove()
      }
    }
    const body = await jsonBody(req)
    if (!trusted) return refuse(400, 'invalid_argument', 'send the snapshot as multipart/form-data with a "file" part (and optionally "verify")')
    if (typeof body.input !== 'string') return refuse(400, 'invalid_argument', 'send {"input": "<bundle path>"}')
    return {body: await importSnapshotLive(engine, {input: body.input, verify: body.verify === true}), status: 200}
  }
  const body = await jsonBody(req)
  if (typeof body.output !== 'string' || body.output === '') return refuse(400, 'invalid_argument', 'send {"output": "<file path>", ...}')
  const output = allowedOutput(body.output, trusted)
  if (typeof output !== 'string') return output
  if (resource === 'backup') {
    const format = (body.format ?? 'tar.gz') as BackupFormat
    const baseCommit = body.base_commit ?? body.baseCommit
    if (baseCommit !== undefined && baseCommit !== null && typeof baseCommit !== 'string') return refuse(400, 'invalid_argument', '"base_commit" must be a commit id')
    return {body: await backupDataDir(engine, {baseCommit: baseCommit ?? undefined, format, output}), status: 201}
  }
  if (body.refs !== undefined && (!Array.isArray(body.refs) || body.refs.some((r) => typeof r !== 'string'))) return refuse(400, 'invalid_argument', '"refs" must be an array of branch names')
  return {body: await exportSnapshotFrom(engine, {output, refs: body.refs as string[] | undefined}), status: 201}
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = (await readBody(req, 1024 * 1024)).toString('utf8')
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    throw new EngineError('invalid_argument', 'request body is not valid JSON')
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new EngineError('invalid_argument', 'send a JSON object')
  return v as Record<string, unknown>
}

/** The output path, or a 403 when an untrusted caller names a place outside the backup directory. */
function allowedOutput(given: string, trusted: boolean): OpsReply | string {
  if (trusted) return resolve(given)
  const backupDir = ownServerLink()?.backupDir ?? resolve('backups')
  const out = resolve(backupDir, given)
  const outside = refuse(403, 'forbidden', `output ${given} is outside the backup directory ${backupDir}; name a file inside it (a relative path is taken inside it)`)
  if (!out.startsWith(`${backupDir}${sep}`)) return outside
  mkdirSync(dirname(out), {recursive: true})
  // Checked again after symlinks are resolved, so a link inside the backup directory cannot lead out of it.
  const root = realpathSync(backupDir)
  const parent = realpathSync(dirname(out))
  if (parent !== root && !parent.startsWith(`${root}${sep}`)) return outside
  return join(parent, basename(out))
}

/** Streams the multipart `file` part to a temporary file in the data directory. */
async function receiveUpload(engine: GitEngine, req: IncomingMessage): Promise<{file: string; remove(): void; verify: boolean}> {
  const {default: busboy} = await import('busboy')
  const dir = opsTempDir(engine.dataDir, 'upload')
  const remove = (): void => rmSync(dir, {force: true, recursive: true})
  const file = join(dir, 'upload')
  try {
    let got = false
    let verify = false
    let writing: Promise<void> | undefined
    const bb = busboy({headers: req.headers, limits: {fileSize: UPLOAD_LIMIT, files: 1}})
    bb.on('file', (name, stream) => {
      if (name !== 'file') {
        stream.resume()
        return
      }
      got = true
      writing = pipeline(stream, createWriteStream(file))
    })
    bb.on('field', (name, value) => {
      if (name === 'verify') verify = value === '' || value === 'true' || value === '1' || value === 'on'
    })
    await pipeline(req, bb)
    await writing
    if (!got) throw new EngineError('invalid_argument', 'the multipart body has no "file" part')
    return {file, remove, verify}
  } catch (error) {
    remove()
    throw error
  }
}
