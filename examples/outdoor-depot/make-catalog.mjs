// Writes catalog.csv: 2,000 products over 20 categories, deterministic, no photos (the example is
// Search only, so no picture is needed). Run from the repository root:
//   node examples/outdoor-depot/make-catalog.mjs
import {writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const site = 'https://outdoor-depot.example'
const categories = {
  'Hiking Boots': [60, 220], 'Trail Shoes': [50, 160], 'Rain Jackets': [40, 300], 'Down Jackets': [90, 400], 'Fleece Tops': [25, 90],
  'Base Layers': [15, 70], 'Walking Socks': [6, 22], 'Backpacks': [30, 250], 'Day Packs': [20, 90], 'Tents': [80, 900],
  'Sleeping Bags': [40, 450], 'Sleeping Mats': [20, 160], 'Camping Stoves': [25, 180], 'Cookware': [10, 80], 'Head Torches': [12, 90],
  'Water Bottles': [8, 45], 'Trekking Poles': [20, 140], 'Climbing Harnesses': [45, 150], 'Gloves': [10, 70], 'Sunglasses': [20, 160],
}
const brands = ['Ridgeline', 'Northwall', 'Fellrunner', 'Cairn', 'Summit Co', 'Moorland', 'Tarn', 'Scree', 'Bothy', 'Gritstone']
const variants = ['Lite', 'Pro', 'Trek', 'Alpine', 'Classic', 'Storm', 'Ultra', 'Eco', 'Tour', 'Expedition']
const colours = ['Black', 'Navy', 'Olive', 'Red', 'Grey']
const rows = [['id', 'title', 'url', 'price', 'category', 'description']]
const names = Object.keys(categories)
for (let i = 0; i < 2000; i++) {
  const category = names[i % names.length]
  const [lo, hi] = categories[category]
  const k = Math.floor(i / names.length)
  const noun = category.replace(/s$/, '').replace(/ Boot$/, ' Boots').replace(/ Shoe$/, ' Shoes')
  const title = `${brands[k % brands.length]} ${variants[Math.floor(k / brands.length) % variants.length]} ${noun} ${colours[i % colours.length]}`
  const slug = `${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${i + 1}`
  const price = (lo + ((hi - lo) * ((i * 37) % 100)) / 100).toFixed(2).replace(/\.\d\d$/, '.99')
  rows.push([`OD-${String(i + 1).padStart(4, '0')}`, title, `${site}/p/${slug}`, price, category, `${title}: tested on the fells by our staff.`])
}
writeFileSync(join(here, 'catalog.csv'), `${rows.map((r) => r.map((c) => (/[",\n]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c)).join(',')).join('\n')}\n`)
console.log(`wrote ${rows.length - 1} products`)
