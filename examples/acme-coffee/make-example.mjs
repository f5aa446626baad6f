// Regenerates catalog.csv, logo.png and images/*.jpg of the example business from code, so the
// pictures are small, deterministic and free to use. Run from the repository root:
//   node examples/acme-coffee/make-example.mjs
import sharp from 'sharp'
import {mkdirSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const site = 'https://acme-coffee.example'

const lines = {
  'Coffee Beans': {
    colour: '#6f4e37', slug: 'beans', price: [12, 28],
    items: ['Ethiopia Yirgacheffe', 'Colombia Huila', 'Kenya Nyeri AA', 'Guatemala Antigua', 'Brazil Cerrado', 'Sumatra Mandheling', 'Costa Rica Tarrazu', 'Rwanda Nyamasheke', 'House Espresso Blend', 'Decaf Mexico Chiapas', 'Peru Cajamarca', 'Honduras Marcala'],
    suffix: 'Whole Bean 250g',
  },
  Grinders: {
    colour: '#44546a', slug: 'grinders', price: [35, 320],
    items: ['Hand Grinder Classic', 'Hand Grinder Pro', 'Burr Grinder Home', 'Burr Grinder Flat 64', 'Travel Hand Grinder', 'Espresso Grinder Stepless', 'Conical Burr Grinder', 'Grinder Brush Set', 'Single Dose Grinder', 'Ceramic Burr Mill'],
    suffix: '',
  },
  Brewers: {
    colour: '#2e7d6b', slug: 'brewers', price: [18, 240],
    items: ['Pour Over Dripper', 'French Press 1L', 'Aeropress Style Brewer', 'Cold Brew Jar', 'Moka Pot 6 Cup', 'Siphon Brewer', 'Batch Brewer 8 Cup', 'Clever Dripper', 'Chemex Style Carafe', 'Espresso Machine Compact'],
    suffix: '',
  },
  Kettles: {
    colour: '#b5651d', slug: 'kettles', price: [30, 160],
    items: ['Gooseneck Kettle Stovetop', 'Electric Gooseneck Kettle', 'Temperature Control Kettle', 'Travel Kettle', 'Copper Pour Kettle', 'Glass Kettle 1.2L', 'Kettle Thermometer', 'Mini Gooseneck Kettle'],
    suffix: '',
  },
  Accessories: {
    colour: '#8e6c8a', slug: 'accessories', price: [6, 90],
    items: ['Coffee Scale with Timer', 'Paper Filters 100 Pack', 'Reusable Metal Filter', 'Milk Frother', 'Tamper 58mm', 'Knock Box', 'Canister Vacuum Seal', 'Ceramic Cup Set', 'Cleaning Tablets', 'Barista Towel Set', 'Acme Coffee Travel Mug'],
    suffix: '',
  },
  Tea: {
    colour: '#5b8c3a', slug: 'tea', price: [8, 24],
    items: ['Sencha Green Tea', 'Assam Breakfast Tea', 'Earl Grey Bergamot', 'Jasmine Pearls', 'Chamomile Flowers', 'Rooibos Vanilla'],
    suffix: 'Loose Leaf 100g',
  },
}

mkdirSync(join(here, 'images'), {recursive: true})
const rows = [['id', 'title', 'url', 'price', 'category', 'image', 'description']]
let n = 0
for (const [category, line] of Object.entries(lines)) {
  for (const [i, name] of line.items.entries()) {
    n++
    const id = `AC-${String(n).padStart(3, '0')}`
    const title = line.suffix ? `${name} ${line.suffix}` : name
    const slug = title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
    const [lo, hi] = line.price
    const price = (lo + ((hi - lo) * ((i * 37) % 100)) / 100).toFixed(2).replace(/\.\d\d$/, '.90')
    const image = `images/${id.toLowerCase()}.jpg`
    rows.push([id, title, `${site}/${line.slug}/${slug}`, price, category, image, `${title} from Acme Coffee, chosen and tested by our roasters.`])
    const hue = line.colour
    // 640x640: large enough for every Performance Max ratio's minimum once cropped (640x335
    // landscape, 512x640 portrait), since the images step never upscales a photo.
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="640" viewBox="0 0 320 320">
      <rect width="320" height="320" fill="#f4efe8"/>
      <circle cx="160" cy="150" r="${70 + (i % 4) * 12}" fill="${hue}"/>
      <rect x="${90 + (i % 3) * 10}" y="230" width="${140 - (i % 3) * 20}" height="26" rx="13" fill="${hue}" opacity="0.55"/>
    </svg>`
    await sharp(Buffer.from(svg)).jpeg({quality: 60}).toFile(join(here, image))
  }
}
const csv = rows.map((r) => r.map((c) => (/[",\n]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c)).join(',')).join('\n')
writeFileSync(join(here, 'catalog.csv'), `${csv}\n`)
const logo = `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256">
  <rect width="256" height="256" rx="40" fill="#3b2417"/>
  <ellipse cx="128" cy="128" rx="62" ry="86" fill="#d9a441" transform="rotate(28 128 128)"/>
  <path d="M100 60 C 150 110, 106 150, 156 196" stroke="#3b2417" stroke-width="12" fill="none"/>
</svg>`
await sharp(Buffer.from(logo)).png({compressionLevel: 9, palette: true}).toFile(join(here, 'logo.png'))
console.log(`wrote ${n} products, ${n} images and logo.png`)
