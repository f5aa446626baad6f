/** Text and attribute values for HTML: the five characters that could end a text or a quoted value. */
export function esc(value: number | string): string {
  return String(value).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;')
}

/** An id usable in a fragment link: letters, digits and dashes. */
export function anchor(...parts: Array<number | string>): string {
  return parts
    .map((p) =>
      String(p)
        .toLowerCase()
        .replaceAll(/[^a-z0-9]+/g, '-')
        .replaceAll(/^-|-$/g, ''),
    )
    .join('-')
}

/** A relative path of the run directory as an href that works from file://, each segment encoded. */
export function relHref(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/')
}
