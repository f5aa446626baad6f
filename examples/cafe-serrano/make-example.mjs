// Regenerates catalog.csv, logo.png and images/*.jpg of the Café Serrano example from code, so the
// pictures are small, deterministic and free to use. Run from the repository root:
//   node examples/cafe-serrano/make-example.mjs
import sharp from 'sharp'
import {mkdirSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const site = 'https://cafeserrano.example'
const lines = {
  'Cafés Especiais': {colour: '#6f4e37', slug: 'cafes', items: [['Catuaí Amarelo em Grãos 250g', 42.9], ['Bourbon Vermelho Moído 250g', 39.9], ['Mundo Novo Torra Média 500g', 69.9], ['Geisha Microlote 250g', 119.9]]},
  'Métodos de Preparo': {colour: '#2e5e4e', slug: 'metodos', items: [['Coador de Pano Artesanal', 24.9], ['Prensa Francesa 600ml', 129.9], ['Chaleira Bico de Ganso 1L', 189.9], ['Moedor Manual de Café com Mó Cerâmica', 159.9]]},
}
mkdirSync(join(here, 'images'), {recursive: true})
const rows = [['id', 'title', 'url', 'price', 'category', 'image', 'description']]
let n = 0
for (const [category, line] of Object.entries(lines)) {
  for (const [i, [title, price]] of line.items.entries()) {
    n++
    const id = `CS-${String(n).padStart(2, '0')}`
    const slug = title.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
    const image = `images/${id.toLowerCase()}.jpg`
    rows.push([id, title, `${site}/${line.slug}/${slug}`, price.toFixed(2), category, image, `${title}, selecionado pela Café Serrano.`])
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="640" viewBox="0 0 320 320">
      <rect width="320" height="320" fill="#f6f0e6"/>
      <rect x="${100 - i * 8}" y="${80 + i * 6}" width="${120 + i * 16}" height="${150 - i * 10}" rx="18" fill="${line.colour}"/>
      <circle cx="160" cy="250" r="${18 + i * 4}" fill="#c8a165"/>
    </svg>`
    await sharp(Buffer.from(svg)).jpeg({quality: 60}).toFile(join(here, image))
  }
}
const csv = rows.map((r) => r.map((c) => (/[",\n]/.test(String(c)) ? `"${String(c).replaceAll('"', '""')}"` : String(c))).join(',')).join('\n')
writeFileSync(join(here, 'catalog.csv'), `${csv}\n`)
const logo = `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256">
  <rect width="256" height="256" rx="128" fill="#4a2c1a"/>
  <path d="M70 170 L128 70 L186 170 Z" fill="#c8a165"/>
</svg>`
await sharp(Buffer.from(logo)).png({compressionLevel: 9, palette: true}).toFile(join(here, 'logo.png'))
console.log(`wrote ${n} products, ${n} images and logo.png`)
