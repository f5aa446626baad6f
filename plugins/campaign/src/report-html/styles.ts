/** The report's only stylesheet, inside the page. Colours keep at least 4.5:1 contrast for text. */
export const STYLES = `
:root{color-scheme:light;--fg:#1f1f1f;--muted:#4d5156;--line:#dadce0;--link:#1a0dab;--err:#b3261e;--warn:#7a4f01;--ok:#146c2e}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;color:var(--fg);background:#fff}
a{color:var(--link)}
:focus-visible{outline:3px solid #1a73e8;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5em}
.skip:focus{left:.5em}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
header.top{padding:1.2em 2em;border-bottom:1px solid var(--line);background:#f8f9fa}
header.top h1{margin:0 0 .2em;font-size:1.6em}
.meta{color:var(--muted);margin:0}
.layout{display:flex;align-items:flex-start}
nav.toc{position:sticky;top:0;flex:0 0 240px;max-height:100vh;overflow:auto;padding:1em;border-right:1px solid var(--line);font-size:14px}
nav.toc ul{list-style:none;padding-left:0;margin:0}
nav.toc ul ul{padding-left:1em}
nav.toc a{display:block;padding:2px 0;text-decoration:none}
nav.toc a:hover{text-decoration:underline}
main{flex:1;min-width:0;padding:1em 2em 3em;max-width:1100px}
h2{margin-top:1.6em;border-bottom:1px solid var(--line);padding-bottom:.2em}
h6{font-size:.9em;margin:.6em 0 .2em}
table{border-collapse:collapse;margin:.6em 0;font-size:14px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f3f4}
td.num,th.num{text-align:right}
caption{text-align:left;font-weight:600;padding:.3em 0}
.status{display:inline-block;padding:.15em .6em;border-radius:4px;font-weight:700;color:#fff}
.status-success{background:var(--ok)}
.status-invalid{background:var(--err)}
.status-incomplete{background:var(--warn)}
.campaign{border:1px solid var(--line);border-radius:8px;padding:0 1.2em 1em;margin:1.2em 0}
.campaign>h3{margin-top:.8em}
.group{border-top:1px solid var(--line);margin-top:1em;padding-top:.4em}
.facts{display:flex;flex-wrap:wrap;gap:.3em 1.5em;margin:.2em 0;padding:0;list-style:none;color:var(--muted)}
.facts b{color:var(--fg);font-weight:600}
ul.issues{list-style:none;padding:0;margin:.5em 0}
ul.issues li{border-left:4px solid;padding:.3em .6em;margin:.3em 0;background:#fafafa}
ul.issues li.error{border-color:var(--err)}
ul.issues li.warning{border-color:#e37400}
.sev{font-weight:700}
.error .sev{color:var(--err)}
.warning .sev{color:var(--warn)}
code{font-size:.92em;background:#f1f3f4;padding:0 .25em;border-radius:3px}
.previews{display:flex;flex-wrap:wrap;gap:1em;margin:.6em 0}
.serp-ad{font-family:Arial,sans-serif;width:600px;max-width:100%;padding:12px 16px;border:1px solid var(--line);border-radius:8px;background:#fff}
.serp-sponsored{margin:0 0 4px;font-weight:700;font-size:14px;color:#202124}
.serp-site{display:flex;align-items:center;gap:10px}
.serp-icon{display:inline-flex;align-items:center;justify-content:center;width:26px;height:26px;border-radius:50%;background:#e8eaed;color:#202124;font-size:13px;font-weight:700}
.serp-name{display:block;font-size:14px;color:#202124}
.serp-url{display:block;font-size:12px;color:var(--muted)}
.serp-headline{margin:6px 0 2px;font-size:20px;line-height:1.3;color:var(--link)}
.serp-desc{margin:0;font-size:14px;color:var(--muted)}
.assets ol{margin:.2em 0;padding-left:1.6em}
.count{color:var(--muted);font-size:12px}
li.over{color:var(--err)}
li.over .count{color:var(--err);font-weight:700}
.kw{columns:3 220px;margin:.3em 0;padding-left:1.2em}
details>summary{cursor:pointer;margin:.4em 0}
.pictures{display:flex;flex-wrap:wrap;gap:12px;margin:.4em 0}
.pictures figure{margin:0;width:200px}
.pictures img{display:block;max-width:200px;max-height:200px;border:1px solid var(--line)}
.pictures figcaption,.chart figcaption{font-size:12px;color:var(--muted)}
.missing{display:flex;align-items:center;justify-content:center;width:200px;height:120px;border:1px dashed var(--err);color:var(--err);font-size:12px}
.display-ad{width:320px;border:1px solid var(--line);border-radius:8px;overflow:hidden;font-family:Arial,sans-serif}
.display-ad img.hero{display:block;width:100%;height:auto}
.display-ad .body{padding:10px 12px;display:flex;gap:10px;align-items:flex-start}
.display-ad img.logo{width:40px;height:40px;object-fit:contain}
.display-ad .h{font-size:16px;font-weight:700;color:#202124;margin:0}
.display-ad .d{font-size:13px;color:var(--muted);margin:2px 0 0}
.display-ad .cta{display:block;margin:0 12px 12px;padding:6px;text-align:center;border-radius:16px;background:#1a73e8;color:#fff;font-weight:700;font-size:13px}
.logo-brand{max-height:64px;vertical-align:middle;margin-right:.6em}
footer{color:var(--muted);font-size:13px;padding:1em 2em;border-top:1px solid var(--line)}
@media (max-width:800px){.layout{display:block}nav.toc{position:static;max-height:none;border-right:0;border-bottom:1px solid var(--line)}}
`
