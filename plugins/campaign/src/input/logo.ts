/** Google Ads' square logo: 1:1, at least 128x128 (Performance Max and Demand Gen). */
export const LOGO_MIN = 128

/**
 * Why a logo file cannot be the account's square logo, or null when it can. A wide logo is
 * refused rather than padded: padding a wordmark into a square makes a logo with bands that
 * Google shows at thumbnail size, and cropping cuts letters off; the owner has a better file.
 */
export async function checkLogo(file: string): Promise<null | string> {
  const {default: sharp} = await import('sharp')
  const meta = await sharp(file)
    .metadata()
    .catch(() => null)
  if (meta === null || !meta.width || !meta.height) return 'is not a picture sharp can read (PNG, JPEG, WebP, GIF, SVG, ...)'
  const {height, width} = meta
  if (Math.abs(width / height - 1) > 0.01) return `is ${width}x${height}; Google Ads needs a square (1:1) logo: use a square version of it`
  if (width < LOGO_MIN) return `is ${width}x${height}; Google Ads needs at least ${LOGO_MIN}x${LOGO_MIN}: use a larger file`
  return null
}
