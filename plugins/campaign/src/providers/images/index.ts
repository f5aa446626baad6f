import {closest, UsageError} from '@toolkit/kit'

/** Makes one picture's bytes (any format sharp reads) from a prompt; throws when it cannot. */
export type ImageGenerator = (prompt: string, shape: {height: number; width: number}) => Promise<Buffer>

interface ImageProviderSpec {
  defaultModel: string
  keyVariable: string
  make(o: {apiKey: string; baseUrl: null | string; model: string}): Promise<ImageGenerator>
}

/** Image models for the `images` step; `offline` (composition with sharp) is the default. */
const IMAGE_PROVIDERS: Record<string, ImageProviderSpec> = {
  gemini: {
    defaultModel: 'gemini-2.5-flash-image',
    keyVariable: 'GEMINI_API_KEY',
    async make(o) {
      const {geminiImages} = await import('./gemini.js')
      return geminiImages(o)
    },
  },
  openai: {
    defaultModel: 'gpt-image-1',
    keyVariable: 'OPENAI_API_KEY',
    async make(o) {
      const {openaiImages} = await import('./openai.js')
      return openaiImages(o)
    },
  },
}

export const IMAGE_PROVIDER_NAMES = ['offline', ...Object.keys(IMAGE_PROVIDERS)]

export interface ImageOptions {
  /** The vendor's endpoint; null for its default or its variable. */
  baseUrl: null | string
  model: null | string
  name: string
}

/** Checks the name and the key before anything runs (exit 2), and returns how to make the generator. */
export function imageGenerator(o: ImageOptions): (() => Promise<ImageGenerator>) | null {
  if (o.name === 'offline') return null
  const spec = IMAGE_PROVIDERS[o.name]
  if (!spec) {
    const hint = closest(o.name, IMAGE_PROVIDER_NAMES)
    throw new UsageError(`unknown image provider "${o.name}"${hint ? ` (did you mean "${hint}"?)` : ''}; image providers: ${IMAGE_PROVIDER_NAMES.join(', ')}`)
  }
  const apiKey = process.env[spec.keyVariable]?.trim()
  if (!apiKey) throw new UsageError(`the ${o.name} image provider needs an API key: set ${spec.keyVariable}`, 'missing_key')
  return () => spec.make({apiKey, baseUrl: o.baseUrl, model: o.model ?? spec.defaultModel})
}
