import {closeSync, openSync, readSync} from 'node:fs'

import {EngineError} from '../engine/errors.js'
import type {BackupFormat} from './manifest.js'

/** What a Git bundle's header says: the commits it needs (prerequisites) and the refs it carries. */
export interface BundleHeader {
  prerequisites: string[]
  refs: Array<{commit: string; name: string}>
}

function head(file: string, bytes: number): Buffer {
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(bytes)
    const n = readSync(fd, buf, 0, bytes, 0)
    return buf.subarray(0, n)
  } finally {
    closeSync(fd)
  }
}

/** tar.gz or bundle, from the file's first bytes. */
export function detectFormat(file: string): BackupFormat {
  const b = head(file, 32)
  if (b[0] === 0x1f && b[1] === 0x8b) return 'tar.gz'
  if (/^# v[23] git bundle\n/.test(b.toString('latin1'))) return 'bundle'
  throw new EngineError('invalid_argument', `${file} is neither a tar.gz backup nor a Git bundle`)
}

export function readBundleHeader(file: string): BundleHeader {
  // A header is a few lines per branch: 64 KiB holds hundreds of branches without reading the pack.
  let buf = head(file, 64 << 10)
  let end = buf.indexOf('\n\n')
  if (end === -1) {
    buf = head(file, 64 << 20)
    end = buf.indexOf('\n\n')
  }
  if (end === -1 || !/^# v[23] git bundle\n/.test(buf.toString('latin1', 0, 20))) throw new EngineError('invalid_argument', `${file} is not a Git bundle (no bundle header)`)
  const out: BundleHeader = {prerequisites: [], refs: []}
  for (const line of buf.toString('utf8', 0, end).split('\n').slice(1)) {
    if (line.startsWith('@')) continue
    if (line.startsWith('-')) out.prerequisites.push(line.slice(1, 41))
    else {
      const [commit, name] = line.split(' ')
      if (name?.startsWith('refs/heads/')) out.refs.push({commit, name})
    }
  }
  return out
}
