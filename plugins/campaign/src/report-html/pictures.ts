import {readFile, stat} from 'node:fs/promises'
import {extname, isAbsolute, join} from 'node:path'

/** A picture at most this large goes into the page as it is; a larger one as a smaller copy. */
const INLINE_BYTES = 64 * 1024
const THUMB_WIDTH = 480

const TYPES: Record<string, string> = {'.gif': 'image/gif', '.jpeg': 'image/jpeg', '.jpg': 'image/jpeg', '.png': 'image/png', '.svg': 'image/svg+xml', '.webp': 'image/webp'}

/**
 * A picture of the run directory as a data: URL, so the report is one file that needs no
 * network and no folder beside it; null when the file is missing or unreadable (validation
 * reports the missing picture).
 */
export async function pictureDataUrl(runDir: string, path: string): Promise<null | string> {
  const file = isAbsolute(path) ? path : join(runDir, path)
  const type = TYPES[extname(file).toLowerCase()]
  if (!type) return null
  try {
    const {size} = await stat(file)
    if (size <= INLINE_BYTES || type === 'image/svg+xml') return `data:${type};base64,${(await readFile(file)).toString('base64')}`
    const {default: sharp} = await import('sharp')
    const small = await sharp(file).resize({width: THUMB_WIDTH, withoutEnlargement: true}).jpeg({quality: 75}).toBuffer()
    return `data:image/jpeg;base64,${small.toString('base64')}`
  } catch {
    return null
  }
}

/** Every picture the report shows, read a few at a time. */
export async function pictureDataUrls(runDir: string, paths: string[]): Promise<Map<string, null | string>> {
  const out = new Map<string, null | string>()
  const queue = [...new Set(paths)]
  const worker = async () => {
    for (let p = queue.shift(); p !== undefined; p = queue.shift()) out.set(p, await pictureDataUrl(runDir, p))
  }
  await Promise.all(Array.from({length: 4}, worker))
  return out
}
