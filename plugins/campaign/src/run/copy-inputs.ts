import {copyFileSync, existsSync, mkdirSync} from 'node:fs'
import {basename, dirname, isAbsolute, join, relative, sep} from 'node:path'

import type {Inputs} from '../input/inputs.js'
import {dashed} from '../lib/slug.js'
import type {Product} from '../types.js'

export interface CopiedInputs {
  /** The catalog with every local photo pointing at its copy, relative to the run directory. */
  catalog: Product[]
  /** `input/<logo>` or null. */
  logo: null | string
}

/**
 * Copies the inputs into `<run>/input/` so the run directory holds everything an import or a later
 * `export` needs, referenced by relative paths: the business file, the catalog, the logo and every
 * product photo (at the same path relative to the catalog copy as beside the original catalog, so
 * the copied catalog still reads). A photo that does not exist keeps its would-be path; validation
 * reports it (`product_image_missing`) instead of the run dropping it silently.
 */
export function copyInputs(runDir: string, inputs: Inputs): CopiedInputs {
  const inputDir = join(runDir, 'input')
  mkdirSync(inputDir, {recursive: true})
  copyFileSync(inputs.businessFile, join(inputDir, 'business.toml'))
  if (inputs.catalogPath !== null) copyFileSync(inputs.catalogPath, join(inputDir, basename(inputs.catalogPath)))
  if (inputs.logoPath !== null) copyFileSync(inputs.logoPath, join(inputDir, basename(inputs.logoPath)))
  const catalogDir = inputs.catalogPath === null ? null : dirname(inputs.catalogPath)
  const copied = new Map<string, string>()
  const catalog = inputs.catalog.map((p) => {
    if (p.image === null || /^https?:\/\//i.test(p.image) || !isAbsolute(p.image)) return p
    let target = copied.get(p.image)
    if (target === undefined) {
      const rel = catalogDir === null ? '' : relative(catalogDir, p.image)
      const inside = rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)
      target = ['input', ...(inside ? rel.split(sep) : ['images', `${dashed(p.id) || 'product'}-${basename(p.image)}`])].join('/')
      copied.set(p.image, target)
      if (existsSync(p.image)) {
        mkdirSync(dirname(join(runDir, target)), {recursive: true})
        copyFileSync(p.image, join(runDir, target))
      }
    }
    return {...p, image: target}
  })
  return {catalog, logo: inputs.logoPath === null ? null : `input/${basename(inputs.logoPath)}`}
}
