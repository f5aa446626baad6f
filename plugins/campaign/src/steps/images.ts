import {copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync} from 'node:fs'
import {basename, dirname, isAbsolute, join} from 'node:path'

import {imageCampaigns} from '../export/google-ads/editor-file.js'
import type {ImageGenerator} from '../providers/images/index.js'
import {slugify} from '../lib/slug.js'
import type {ImageKind, ImageRecord, Product, Workspace} from '../types.js'
import {PLATFORM_DIR} from './export.js'

/** Google's recommended size per ratio: what a picture is made at when the photo holds it. */
export const PICTURE_SIZES: Record<ImageKind, {height: number; width: number}> = {
  landscape: {height: 628, width: 1200},
  portrait: {height: 1200, width: 960},
  square: {height: 1200, width: 1200},
}

/** Google's minimum per ratio; a photo that cannot give this much once cropped is not used. */
export const PICTURE_MINIMUMS: Record<ImageKind, {height: number; width: number}> = {
  landscape: {height: 314, width: 600},
  portrait: {height: 600, width: 480},
  square: {height: 300, width: 300},
}

const KINDS: ImageKind[] = ['landscape', 'square', 'portrait']
/** Pictures per ratio per asset group, one product each, when the group has that many photos. */
export const PICTURES_PER_RATIO = 3

export interface PicturePlan {
  asset_group: string
  campaign: string
  id: string
  kind: ImageKind
  path: string
  /** Products whose photos may make this picture, the preferred one first. */
  products: string[]
}

export interface ImagesReport {
  failed: {path: string; reason: string}[]
  made: number
  /** Pictures found truncated or unreadable and made again. */
  regenerated: string[]
  reused: number
  /** Every file the step wrote (pictures and the logo copy), relative to the run directory. */
  written: string[]
}

/**
 * What the images step will produce: for each asset group of each image campaign, up to three
 * pictures per ratio (landscape, square, portrait), each from another product's photo. A group
 * whose products have no photo gets none: a marketing image must show what is sold.
 */
export function planPictures(ws: Workspace): PicturePlan[] {
  const withPhoto = new Set(ws.input.catalog.filter((p) => p.image !== null && !/^https?:/i.test(p.image)).map((p) => p.id))
  const plans: PicturePlan[] = []
  for (const c of imageCampaigns(ws)) {
    for (const g of c.asset_groups) {
      const ids = g.product_ids.filter((id) => withPhoto.has(id))
      const count = Math.min(PICTURES_PER_RATIO, ids.length)
      for (const kind of KINDS) {
        for (let n = 0; n < count; n++) {
          const id = `${kind}-${n + 1}`
          plans.push({
            asset_group: g.name,
            campaign: c.slug,
            id,
            kind,
            path: join(PLATFORM_DIR, 'editor', 'images', c.slug, `${slugify(g.name)}-${id}.jpg`),
            products: [...ids.slice(n), ...ids.slice(0, n)],
          })
        }
      }
    }
  }
  return plans
}

/**
 * The largest size of the kind's ratio that a photo of `width`x`height` holds without upscaling,
 * capped at the recommended size; null when that is below Google's minimum.
 */
export function fittedSize(kind: ImageKind, width: number, height: number): null | {height: number; width: number} {
  const want = PICTURE_SIZES[kind]
  const ratio = want.width / want.height
  let w = Math.min(want.width, width, Math.floor(height * ratio))
  let h = Math.round(w / ratio)
  if (h > height) {
    h = height
    w = Math.floor(h * ratio)
  }
  const min = PICTURE_MINIMUMS[kind]
  return w < min.width || h < min.height ? null : {height: h, width: w}
}

/**
 * Makes each planned picture with sharp: the product photo cropped to the ratio around its most
 * salient part (sharp's attention strategy), never upscaled past what it holds, never
 * letterboxed, with nothing drawn over it (the logo is its own asset). Written to a temporary file
 * and renamed, so a crash leaves no half picture. A picture already in the run directory is
 * reused when it decodes whole at a valid size; a truncated or unreadable one is made again.
 */
export async function makePictures(
  ws: Workspace,
  runDir: string,
  plans: PicturePlan[],
  onFailed: (path: string, reason: string) => void,
  onRegenerated: (path: string, reason: string) => void = () => {},
  generate?: ImageGenerator,
): Promise<ImagesReport> {
  const report: ImagesReport = {failed: [], made: 0, regenerated: [], reused: 0, written: []}
  for (const c of imageCampaigns(ws)) for (const g of c.asset_groups) if (!plans.some((p) => p.campaign === c.slug && p.asset_group === g.name)) g.images = []
  if (plans.length === 0) return report
  const {default: sharp} = await import('sharp')
  const logoFile = ws.input.logo === null ? null : join(runDir, ws.input.logo)
  if (logoFile !== null && existsSync(logoFile)) {
    const target = join(runDir, PLATFORM_DIR, 'editor', 'images', basename(logoFile))
    if (!existsSync(target) || !readFileSync(target).equals(readFileSync(logoFile))) {
      mkdirSync(dirname(target), {recursive: true})
      copyFileSync(logoFile, `${target}.tmp`)
      renameSync(`${target}.tmp`, target)
      report.written.push(join(PLATFORM_DIR, 'editor', 'images', basename(logoFile)))
    }
  }
  const products = new Map<string, Product>(ws.input.catalog.map((p) => [p.id, p]))
  const photoOf = (id: string): null | string => {
    const image = products.get(id)?.image ?? null
    if (image === null || /^https?:/i.test(image)) return null
    return isAbsolute(image) ? image : join(runDir, image)
  }
  const records = new Map<string, ImageRecord[]>()

  const reusable = async (file: string, kind: ImageKind): Promise<{height: number; width: number} | string> => {
    try {
      // Decoding every pixel is what finds a truncated JPEG; the header alone looks fine.
      const {info} = await sharp(file, {failOn: 'truncated'}).raw().toBuffer({resolveWithObject: true})
      const min = PICTURE_MINIMUMS[kind]
      const want = PICTURE_SIZES[kind].width / PICTURE_SIZES[kind].height
      if (info.width < min.width || info.height < min.height || Math.abs(info.width / info.height / want - 1) > 0.01) return `it is ${info.width}x${info.height}`
      return {height: info.height, width: info.width}
    } catch (error) {
      return (error as Error).message
    }
  }

  const compose = async (plan: PicturePlan): Promise<ImageRecord> => {
    const file = join(runDir, plan.path)
    if (existsSync(file)) {
      const found = await reusable(file, plan.kind)
      if (typeof found !== 'string') {
        report.reused++
        return {...found, id: plan.id, kind: plan.kind, path: plan.path}
      }
      report.regenerated.push(plan.path)
      onRegenerated(plan.path, `the existing file is damaged (${found}); making it again`)
      rmSync(file, {force: true})
    }
    if (generate) {
      // An image model's picture, cropped to the exact size; written under a temporary name and
      // renamed, so an interrupted run never leaves half a picture for --resume to reuse.
      const size = PICTURE_SIZES[plan.kind]
      const tmp = `${file}.tmp-${process.pid}`
      try {
        const bytes = await generate(picturePrompt(ws, plan, products), size)
        mkdirSync(dirname(file), {recursive: true})
        await sharp(bytes).resize({...size, fit: 'cover'}).jpeg({quality: 85}).toFile(tmp)
        renameSync(tmp, file)
        report.made++
        report.written.push(plan.path)
        return {...size, id: plan.id, kind: plan.kind, path: plan.path}
      } catch (error) {
        rmSync(tmp, {force: true})
        // The run goes on with the product photo; the step event says what failed.
        onFailed(plan.path, `the image model failed (${(error as Error).message}); cropped from the product photo instead`)
      }
    }
    const reasons: string[] = []
    for (const id of plan.products) {
      const photo = photoOf(id)
      if (photo === null || !existsSync(photo)) {
        reasons.push(`product ${id}: photo missing`)
        continue
      }
      let meta: {height?: number; width?: number}
      try {
        meta = await sharp(photo).metadata()
      } catch (error) {
        reasons.push(`product ${id}: ${(error as Error).message}`)
        continue
      }
      const size = fittedSize(plan.kind, meta.width ?? 0, meta.height ?? 0)
      if (size === null) {
        const min = PICTURE_MINIMUMS[plan.kind]
        reasons.push(`product ${id}: its ${meta.width}x${meta.height} photo cannot give a ${plan.kind} picture of at least ${min.width}x${min.height} without upscaling`)
        continue
      }
      mkdirSync(dirname(file), {recursive: true})
      const tmp = `${file}.tmp-${process.pid}`
      try {
        await sharp(photo, {failOn: 'truncated'})
          .rotate()
          .resize({...size, fit: 'cover', position: sharp.strategy.attention})
          .flatten({background: '#ffffff'})
          // mozjpeg's tables and progressive scans without its trellis quantisation: files 5% larger
          // than full mozjpeg at 60% of its CPU (about 10 ms a picture, a second per 100 pictures).
          .jpeg({mozjpeg: true, quality: 85, trellisQuantisation: false})
          .toFile(tmp)
        renameSync(tmp, file)
      } catch (error) {
        rmSync(tmp, {force: true})
        reasons.push(`product ${id}: ${(error as Error).message}`)
        continue
      }
      report.made++
      report.written.push(plan.path)
      return {...size, id: plan.id, kind: plan.kind, path: plan.path}
    }
    throw new Error(reasons.join('; ') || 'no product photo')
  }
  // sharp runs on libuv's pool; a few pictures at a time keep memory flat on big accounts.
  for (let i = 0; i < plans.length; i += 4) {
    await Promise.all(
      plans.slice(i, i + 4).map(async (plan) => {
        try {
          const rec = await compose(plan)
          const key = `${plan.campaign}\u0000${plan.asset_group}`
          records.set(key, [...(records.get(key) ?? []), rec])
        } catch (error) {
          const reason = (error as Error).message
          report.failed.push({path: plan.path, reason})
          onFailed(plan.path, reason)
        }
      }),
    )
  }
  for (const c of imageCampaigns(ws)) {
    for (const g of c.asset_groups) {
      const key = `${c.slug}\u0000${g.name}`
      if (!plans.some((p) => `${p.campaign}\u0000${p.asset_group}` === key)) continue
      g.images = (records.get(key) ?? []).sort((a, b) => KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind) || a.id.localeCompare(b.id))
    }
  }
  return report
}

/** What the image model is asked for: the product or group, the brand, and no text in the picture. */
function picturePrompt(ws: Workspace, plan: PicturePlan, products: Map<string, Product>): string {
  const product = plan.products.length === 0 ? null : products.get(plan.products[0])
  const subject = product ? `${product.title}: ${product.description}` : plan.asset_group
  const colors = ws.account.brand_kit?.colors.join(', ') ?? ws.input.colors.join(', ')
  return [
    `An advertising photograph for ${ws.input.business.name} (${ws.input.business.description})`,
    `Subject: ${subject}.`,
    `${plan.kind} format. Clean, well lit, realistic.${colors ? ` Brand colours: ${colors}.` : ''} No text, letters, logos or watermarks in the picture.`,
  ].join('\n')
}
