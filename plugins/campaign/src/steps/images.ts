import {copyFileSync, existsSync, mkdirSync, renameSync, rmSync} from 'node:fs'
import {basename, dirname, isAbsolute, join} from 'node:path'

import {slugify} from '../lib/slug.js'
import type {ImageGenerator} from '../providers/images/index.js'
import type {ImageKind, ImageRecord, Product, Workspace} from '../types.js'
import {imageCampaigns} from '../export/google-ads/editor-file.js'
import {PLATFORM_DIR} from './export.js'

export const PICTURE_SIZES: Record<ImageKind, {height: number; width: number}> = {
  landscape: {height: 628, width: 1200},
  portrait: {height: 1200, width: 960},
  square: {height: 1200, width: 1200},
}

export interface PicturePlan {
  asset_group: string
  campaign: string
  id: string
  kind: ImageKind
  path: string
  product: null | string
}

export interface ImagesReport {
  failed: {path: string; reason: string}[]
  made: number
  reused: number
}

/** What the images step will produce: three pictures per asset group of each image campaign. */
export function planPictures(ws: Workspace): PicturePlan[] {
  const plans: PicturePlan[] = []
  for (const c of imageCampaigns(ws)) {
    for (const g of c.asset_groups) {
      const kinds: ImageKind[] = ['landscape', 'square', 'portrait']
      for (const [i, kind] of kinds.entries()) {
        const id = `${kind}-1`
        plans.push({
          asset_group: g.name,
          campaign: c.slug,
          id,
          kind,
          path: join(PLATFORM_DIR, 'editor', 'images', c.slug, `${slugify(g.name)}-${id}.jpg`),
          product: g.product_ids.length > 0 ? g.product_ids[i % g.product_ids.length] : null,
        })
      }
    }
  }
  return plans
}

/**
 * The offline image provider: composes each picture with sharp from the product photo, the
 * logo and the brand colours. A picture already in the run directory is reused, so `--resume`
 * and `export` keep what an earlier run made. A picture that cannot be made is reported and
 * left out (validation then reports the asset group's missing picture).
 */
export async function makePictures(ws: Workspace, runDir: string, plans: PicturePlan[], onFailed: (path: string, reason: string) => void, generate?: ImageGenerator): Promise<ImagesReport> {
  const report: ImagesReport = {failed: [], made: 0, reused: 0}
  if (plans.length === 0) return report
  const {default: sharp} = await import('sharp')
  const colors = ws.account.brand_kit?.colors.length ? ws.account.brand_kit.colors : ws.input.colors.length ? ws.input.colors : ['#1f2937', '#f59e0b']
  const logoFile = ws.input.logo === null ? null : join(runDir, ws.input.logo)
  if (logoFile !== null && existsSync(logoFile)) {
    const target = join(runDir, PLATFORM_DIR, 'editor', 'images', basename(logoFile))
    mkdirSync(dirname(target), {recursive: true})
    copyFileSync(logoFile, target)
  }
  const products = new Map<string, Product>(ws.input.catalog.map((p) => [p.id, p]))
  const records = new Map<string, ImageRecord[]>()
  const compose = async (plan: PicturePlan): Promise<ImageRecord> => {
    const {height, width} = PICTURE_SIZES[plan.kind]
    const file = join(runDir, plan.path)
    const record: ImageRecord = {height, id: plan.id, kind: plan.kind, path: plan.path, width}
    if (existsSync(file)) {
      const meta = await sharp(file).metadata()
      report.reused++
      return {...record, height: meta.height ?? height, width: meta.width ?? width}
    }
    if (generate) {
      // An image model's picture, cropped to the exact size; written under a temporary name and
      // renamed, so an interrupted run never leaves half a picture for --resume to reuse.
      const tmp = `${file}.tmp`
      try {
        const bytes = await generate(picturePrompt(ws, plan, products), {height, width})
        mkdirSync(dirname(file), {recursive: true})
        await sharp(bytes).resize({fit: 'cover', height, width}).jpeg({quality: 85}).toFile(tmp)
        renameSync(tmp, file)
        report.made++
        return record
      } catch (error) {
        rmSync(tmp, {force: true})
        // The run goes on with the offline composition; the step event says what failed.
        onFailed(plan.path, `the image model failed (${(error as Error).message}); composed offline instead`)
      }
    }
    const band = Math.round(height * 0.16)
    const layers: {input: Buffer; left: number; top: number}[] = []
    const image = plan.product === null ? null : (products.get(plan.product)?.image ?? null)
    const photo = image === null || /^https?:/i.test(image) || isAbsolute(image) ? image : join(runDir, image)
    if (photo !== null && !/^https?:/i.test(photo) && existsSync(photo)) {
      const box = {height: height - band - Math.round(height * 0.08), width: Math.round(width * 0.9)}
      const buf = await sharp(photo).resize({...box, background: colors[0], fit: 'contain'}).toBuffer()
      layers.push({input: buf, left: Math.round((width - box.width) / 2), top: Math.round(height * 0.04)})
    }
    const accent = colors[1] ?? colors[0]
    layers.push({input: await sharp({create: {background: accent, channels: 3, height: band, width}}).png().toBuffer(), left: 0, top: height - band})
    if (logoFile !== null && existsSync(logoFile)) {
      const side = Math.round(band * 0.8)
      const logo = await sharp(logoFile).resize({background: accent, fit: 'contain', height: side, width: side}).toBuffer()
      layers.push({input: logo, left: Math.round(band * 0.1), top: height - band + Math.round(band * 0.1)})
    }
    mkdirSync(dirname(file), {recursive: true})
    await sharp({create: {background: colors[0], channels: 3, height, width}}).composite(layers).jpeg({quality: 82}).toFile(file)
    report.made++
    return record
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
      const order: ImageKind[] = ['landscape', 'square', 'portrait']
      g.images = (records.get(`${c.slug}\u0000${g.name}`) ?? []).sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind))
    }
  }
  return report
}

/** What the image model is asked for: the product or group, the brand, and no text in the picture. */
function picturePrompt(ws: Workspace, plan: PicturePlan, products: Map<string, Product>): string {
  const product = plan.product === null ? null : products.get(plan.product)
  const subject = product ? `${product.title}: ${product.description}` : plan.asset_group
  const colors = ws.account.brand_kit?.colors.join(', ') ?? ws.input.colors.join(', ')
  return [
    `An advertising photograph for ${ws.input.business.name} (${ws.input.business.description})`,
    `Subject: ${subject}.`,
    `${plan.kind} format. Clean, well lit, realistic.${colors ? ` Brand colours: ${colors}.` : ''} No text, letters, logos or watermarks in the picture.`,
  ].join('\n')
}
