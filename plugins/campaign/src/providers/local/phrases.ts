/**
 * The offline planner's words, per language. A model writes copy in any language; this planner
 * only in the languages below, and says so (a mission failure a retry cannot fix) for others
 * rather than shipping English copy to an account that speaks another language.
 */
export interface Phrases {
  ad: {
    brandHeadlines: (n: string) => string[]
    browse: (count: number, c: string, n: string) => string
    careBrand: (n: string) => string
    careCategory: (n: string, c: string) => string
    compare: string
    compareCategory: (c: string) => string
    cta: string
    deals: (c: string) => string
    discover: (n: string) => string
    fairPrices: string
    from: (c: string, p: string) => string
    /** The same as a sentence start: `Tea from $8.90.` */
    fromSentence: (c: string, p: string) => string
    fullRange: string
    longHeadlines: (c: string, n: string) => string[]
    officialStore: (n: string) => string
    order: string
    orderBrand: (n: string) => string
    orderCategory: (c: string, n: string) => string
    orderFrom: (n: string) => string
    pricesFrom: (p: string) => string
    pricesFromCompare: (p: string) => string
    rangeBrand: (n: string) => string
    secure: string
    secureOrder: string
    shop: (c: string) => string
    shopNow: string
    shopOnline: (c: string) => string
    toChoose: (count: number, c: string) => string
    at: (c: string, n: string) => string
    buyOnline: (c: string) => string
  }
  /** Search terms of the category ad group: category plus buying intent. */
  intent: (c: string) => string[]
  /** Negatives for searches that do not buy. */
  negatives: string[]
  paths: {prices: string; products: string; shop: string}
  /** Search terms of the price ad group. */
  price: (c: string) => string[]
  /** For a service (no catalog): the service with local or hiring intent, and its price searches. */
  service: (c: string) => string[]
  /** Ad copy for a service business: headlines and descriptions (no shop words). */
  serviceAd: {descriptions: (c: string, n: string) => string[]; headlines: (c: string, n: string) => string[]}
  servicePrice: (c: string) => string[]
}

const en: Phrases = {
  ad: {
    at: (c, n) => `${c} at ${n}`,
    brandHeadlines: (n) => [n, `${n} Official Site`, `Shop ${n} Online`, `${n} Store`, 'Order Online Today', 'Secure Checkout', `Discover ${n}`, `Visit ${n}`, 'See the Full Range', 'Browse Our Catalog'],
    browse: (k, c, n) => `Browse ${k} ${c} at ${n} and order online today.`,
    buyOnline: (c) => `Buy ${c} Online`,
    careBrand: (n) => `${n}: chosen with care, ready to order online.`,
    careCategory: (n, c) => `${n}: ${c} chosen with care, ready to order online.`,
    compare: 'Compare options side by side and pick the right one for you.',
    compareCategory: (c) => `Compare ${c}`,
    cta: 'Shop now',
    deals: (c) => `${c} Deals`,
    discover: (n) => `Discover ${n}`,
    fairPrices: 'Fair Prices',
    from: (c, p) => `${c} From ${p}`,
    fromSentence: (c, p) => `${c} from ${p}.`,
    fullRange: 'Browse the Full Range',
    longHeadlines: (c, n) => [`${c} from ${n}, ready to order online`, `Shop ${c.toLowerCase()} at ${n} with secure checkout`],
    officialStore: (n) => `Official ${n} Store`,
    order: 'Order Online Today',
    orderBrand: (n) => `Order from the ${n} online store with secure checkout.`,
    orderCategory: (c, n) => `Order ${c} from the ${n} online store with secure checkout.`,
    orderFrom: (n) => `Order online today from ${n}.`,
    pricesFrom: (p) => `Prices From ${p}`,
    pricesFromCompare: (p) => `Prices from ${p}. Compare options side by side and pick the right one for you.`,
    rangeBrand: (n) => `Shop the full ${n} range online. Order today.`,
    secure: 'Secure Checkout',
    secureOrder: 'Secure checkout. Order online today.',
    shop: (c) => `Shop ${c}`,
    shopNow: 'Shop Now',
    shopOnline: (c) => `Shop ${c} online.`,
    toChoose: (k, c) => `${k} ${c} to Choose`,
  },
  intent: (c) => [`buy ${c}`, `${c} online`, `${c} shop`],
  negatives: ['free', 'jobs', 'careers', 'diy', 'how to make', 'wholesale', 'second hand', 'used', 'recipe'],
  paths: {prices: 'prices', products: 'products', shop: 'shop'},
  price: (c) => [`${c} price`, `${c} prices`, `best ${c}`, `${c} deals`, `${c} sale`],
  service: (c) => [`${c} near me`, `${c} service`, `local ${c}`],
  servicePrice: (c) => [`${c} cost`, `${c} price`, `${c} quote`, `best ${c}`, `affordable ${c}`],
  serviceAd: {
    descriptions: (c, n) => [`${n}: ${c.toLowerCase()} done right, at a fair price.`, 'Call now or book online. Clear prices before we start.', `Fast, friendly ${c.toLowerCase()} from ${n}.`],
    headlines: (c, n) => [c, `${c} Near You`, `${c} by ${n}`, `Book ${c}`, `Fast ${c}`, n, 'Call Now', 'Book Online Today', 'Clear Prices Up Front', 'Fast Response', `Trusted ${c}`, 'Free Quote'],
  },
}

const pt: Phrases = {
  ad: {
    at: (c, n) => `${c} na ${n}`,
    brandHeadlines: (n) => [n, `${n} Site Oficial`, `Compre na ${n}`, `Loja ${n}`, 'Peça Online Hoje', 'Compra Segura', `Conheça a ${n}`, `Visite a ${n}`, 'Veja a Linha Completa', 'Confira o Catálogo'],
    browse: (k, c, n) => `Veja ${k} opções de ${c} na ${n} e peça online hoje.`,
    buyOnline: (c) => `Compre ${c} Online`,
    careBrand: (n) => `${n}: escolhido com cuidado, pronto para pedir online.`,
    careCategory: (n, c) => `${n}: ${c} escolhidos com cuidado, prontos para pedir.`,
    compare: 'Compare as opções lado a lado e escolha a ideal para você.',
    compareCategory: (c) => `Compare ${c}`,
    cta: 'Comprar',
    deals: (c) => `Ofertas de ${c}`,
    discover: (n) => `Conheça a ${n}`,
    fairPrices: 'Preços Justos',
    from: (c, p) => `${c} a Partir de ${p}`,
    fromSentence: (c, p) => `${c} a partir de ${p}.`,
    fullRange: 'Veja a Linha Completa',
    longHeadlines: (c, n) => [`${c} da ${n}, prontos para pedir online`, `Compre ${c.toLowerCase()} na ${n} com pagamento seguro`],
    officialStore: (n) => `Loja Oficial ${n}`,
    order: 'Peça Online Hoje',
    orderBrand: (n) => `Peça na loja online da ${n} com pagamento seguro.`,
    orderCategory: (c, n) => `Peça ${c} na loja online da ${n} com pagamento seguro.`,
    orderFrom: (n) => `Peça online hoje na ${n}.`,
    pricesFrom: (p) => `Preços a Partir de ${p}`,
    pricesFromCompare: (p) => `Preços a partir de ${p}. Compare as opções e escolha a ideal para você.`,
    rangeBrand: (n) => `Toda a linha ${n} online. Peça hoje.`,
    secure: 'Compra Segura',
    secureOrder: 'Pagamento seguro. Peça online hoje.',
    shop: (c) => `Compre ${c}`,
    shopNow: 'Compre Agora',
    shopOnline: (c) => `Compre ${c} online.`,
    toChoose: (k, c) => `${k} Opções de ${c}`,
  },
  intent: (c) => [`comprar ${c}`, `${c} online`, `loja de ${c}`],
  negatives: ['grátis', 'gratis', 'emprego', 'vagas', 'usado', 'usados', 'receita', 'como fazer', 'atacado'],
  paths: {prices: 'precos', products: 'produtos', shop: 'loja'},
  price: (c) => [`${c} preço`, `${c} preços`, `melhor ${c}`, `${c} promoção`, `${c} oferta`],
  service: (c) => [`${c} perto de mim`, `serviço de ${c}`, `${c} 24 horas`],
  servicePrice: (c) => [`${c} preço`, `${c} orçamento`, `${c} valor`, `melhor ${c}`],
  serviceAd: {
    descriptions: (c, n) => [`${n}: ${c.toLowerCase()} bem feito, com preço justo.`, 'Ligue agora ou agende online. Orçamento antes de começar.', `${c} rápido e de confiança com a ${n}.`],
    headlines: (c, n) => [c, `${c} Perto de Você`, `${c} com a ${n}`, `Agende ${c}`, n, 'Ligue Agora', 'Agende Online', 'Orçamento Grátis', 'Atendimento Rápido'],
  },
}

const es: Phrases = {
  ad: {
    at: (c, n) => `${c} en ${n}`,
    brandHeadlines: (n) => [n, `${n} Sitio Oficial`, `Compra en ${n}`, `Tienda ${n}`, 'Pide Online Hoy', 'Pago Seguro', `Descubre ${n}`, `Visita ${n}`, 'Ve Toda la Gama', 'Mira el Catálogo'],
    browse: (k, c, n) => `Mira ${k} opciones de ${c} en ${n} y pide online hoy.`,
    buyOnline: (c) => `Compra ${c} Online`,
    careBrand: (n) => `${n}: elegido con cuidado, listo para pedir online.`,
    careCategory: (n, c) => `${n}: ${c} elegidos con cuidado, listos para pedir.`,
    compare: 'Compara las opciones y elige la que mejor te va.',
    compareCategory: (c) => `Compara ${c}`,
    cta: 'Comprar',
    deals: (c) => `Ofertas de ${c}`,
    discover: (n) => `Descubre ${n}`,
    fairPrices: 'Precios Justos',
    from: (c, p) => `${c} Desde ${p}`,
    fromSentence: (c, p) => `${c} desde ${p}.`,
    fullRange: 'Ve Toda la Gama',
    longHeadlines: (c, n) => [`${c} de ${n}, listos para pedir online`, `Compra ${c.toLowerCase()} en ${n} con pago seguro`],
    officialStore: (n) => `Tienda Oficial ${n}`,
    order: 'Pide Online Hoy',
    orderBrand: (n) => `Pide en la tienda online de ${n} con pago seguro.`,
    orderCategory: (c, n) => `Pide ${c} en la tienda online de ${n} con pago seguro.`,
    orderFrom: (n) => `Pide online hoy en ${n}.`,
    pricesFrom: (p) => `Precios Desde ${p}`,
    pricesFromCompare: (p) => `Precios desde ${p}. Compara las opciones y elige la tuya.`,
    rangeBrand: (n) => `Toda la gama ${n} online. Pide hoy.`,
    secure: 'Pago Seguro',
    secureOrder: 'Pago seguro. Pide online hoy.',
    shop: (c) => `Compra ${c}`,
    shopNow: 'Compra Ya',
    shopOnline: (c) => `Compra ${c} online.`,
    toChoose: (k, c) => `${k} Opciones de ${c}`,
  },
  intent: (c) => [`comprar ${c}`, `${c} online`, `tienda de ${c}`],
  negatives: ['gratis', 'empleo', 'trabajo', 'usado', 'usados', 'receta', 'como hacer', 'mayorista', 'segunda mano'],
  paths: {prices: 'precios', products: 'productos', shop: 'tienda'},
  price: (c) => [`${c} precio`, `${c} precios`, `mejor ${c}`, `${c} oferta`, `${c} ofertas`],
  service: (c) => [`${c} cerca de mí`, `servicio de ${c}`, `${c} 24 horas`],
  servicePrice: (c) => [`${c} precio`, `${c} presupuesto`, `${c} tarifa`, `mejor ${c}`],
  serviceAd: {
    descriptions: (c, n) => [`${n}: ${c.toLowerCase()} bien hecho, a buen precio.`, 'Llama ahora o reserva online. Presupuesto antes de empezar.', `${c} rápido y de confianza con ${n}.`],
    headlines: (c, n) => [c, `${c} Cerca de Ti`, `${c} con ${n}`, `Reserva ${c}`, n, 'Llama Ahora', 'Reserva Online', 'Presupuesto Gratis', 'Atención Rápida'],
  },
}

const de: Phrases = {
  ad: {
    at: (c, n) => `${c} bei ${n}`,
    brandHeadlines: (n) => [n, `${n} Offizielle Seite`, `${n} Online Shop`, `${n} Shop`, 'Heute Online Bestellen', 'Sicher Bezahlen', `Entdecke ${n}`, `Besuche ${n}`, 'Das Ganze Sortiment', 'Zum Katalog'],
    browse: (k, c, n) => `${k} Angebote für ${c} bei ${n}. Heute online bestellen.`,
    buyOnline: (c) => `${c} Online Kaufen`,
    careBrand: (n) => `${n}: sorgfältig ausgewählt, online bestellbar.`,
    careCategory: (n, c) => `${n}: ${c} sorgfältig ausgewählt, online bestellbar.`,
    compare: 'Vergleiche die Angebote und wähle das passende für dich.',
    compareCategory: (c) => `${c} Vergleichen`,
    cta: 'Jetzt kaufen',
    deals: (c) => `${c} Angebote`,
    discover: (n) => `Entdecke ${n}`,
    fairPrices: 'Faire Preise',
    from: (c, p) => `${c} ab ${p}`,
    fromSentence: (c, p) => `${c} ab ${p}.`,
    fullRange: 'Das Ganze Sortiment',
    longHeadlines: (c, n) => [`${c} von ${n}, heute online bestellen`, `${c} bei ${n} kaufen und sicher bezahlen`],
    officialStore: (n) => `Offizieller ${n} Shop`,
    order: 'Heute Online Bestellen',
    orderBrand: (n) => `Im Online-Shop von ${n} bestellen und sicher bezahlen.`,
    orderCategory: (c, n) => `${c} im Online-Shop von ${n} bestellen, sicher bezahlen.`,
    orderFrom: (n) => `Heute online bei ${n} bestellen.`,
    pricesFrom: (p) => `Preise ab ${p}`,
    pricesFromCompare: (p) => `Preise ab ${p}. Vergleiche die Angebote und wähle das passende.`,
    rangeBrand: (n) => `Das ganze ${n} Sortiment online. Heute bestellen.`,
    secure: 'Sicher Bezahlen',
    secureOrder: 'Sicher bezahlen. Heute online bestellen.',
    shop: (c) => `${c} Kaufen`,
    shopNow: 'Jetzt Kaufen',
    shopOnline: (c) => `${c} online kaufen.`,
    toChoose: (k, c) => `${k} ${c} zur Auswahl`,
  },
  intent: (c) => [`${c} kaufen`, `${c} online`, `${c} shop`],
  negatives: ['kostenlos', 'gratis', 'jobs', 'stellenangebote', 'gebraucht', 'rezept', 'selber machen', 'großhandel'],
  paths: {prices: 'preise', products: 'produkte', shop: 'shop'},
  price: (c) => [`${c} preis`, `${c} preise`, `${c} günstig`, `${c} angebot`, `beste ${c}`],
  service: (c) => [`${c} in der nähe`, `${c} service`, `${c} notdienst`],
  servicePrice: (c) => [`${c} kosten`, `${c} preis`, `${c} angebot`, `bester ${c}`],
  serviceAd: {
    descriptions: (c, n) => [`${n}: ${c} zuverlässig und zum fairen Preis.`, 'Jetzt anrufen oder online buchen. Klare Preise vorab.', `Schneller ${c} von ${n}.`],
    headlines: (c, n) => [c, `${c} in Ihrer Nähe`, `${c} von ${n}`, `${c} Buchen`, n, 'Jetzt Anrufen', 'Online Buchen', 'Kostenloses Angebot', 'Schnelle Hilfe'],
  },
}

const BOOK: Record<string, Phrases> = {de, en, es, pt}

/** Languages (primary subtags) the offline planner writes. */
export const LOCAL_LANGUAGES = Object.keys(BOOK)

/** The phrases for a BCP 47 tag (`pt-BR` -> `pt`), or null when the planner has none. */
export function phrasesFor(language: string): null | Phrases {
  return BOOK[language.split('-')[0].toLowerCase()] ?? null
}
