/** `Acme Coffee - Beans & Grinders` -> `acme-coffee-beans-grinders`: ASCII, lowercase, dashes. */
export function slugify(text: string): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return slug || 'campaign'
}
