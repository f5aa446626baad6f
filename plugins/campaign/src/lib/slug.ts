/** `Acme Coffee - Beans & Grinders` -> `acme-coffee-beans-grinders`: ASCII, lowercase, dashes; may be empty. */
export function dashed(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
}

/** A campaign slug: `dashed(text)`, never empty. */
export function slugify(text: string): string {
  return dashed(text) || 'campaign'
}
