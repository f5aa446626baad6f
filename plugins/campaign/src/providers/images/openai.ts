import type {ImageGenerator} from './index.js'

/** OpenAI's image generation (`POST /v1/images/generations`), the size closest to the picture's shape. */
export async function openaiImages(o: {apiKey: string; baseUrl: null | string; model: string}): Promise<ImageGenerator> {
  const {default: OpenAI} = await import('openai')
  const client = new OpenAI({apiKey: o.apiKey, maxRetries: 2, ...(o.baseUrl ? {baseURL: o.baseUrl} : {})})
  return async (prompt, shape) => {
    const ratio = shape.width / shape.height
    const size = ratio > 1.2 ? '1536x1024' : ratio < 0.85 ? '1024x1536' : '1024x1024'
    const res = await client.images.generate({model: o.model, n: 1, prompt, size})
    const b64 = res.data?.[0]?.b64_json
    if (!b64) throw new Error('the image API returned no picture')
    return Buffer.from(b64, 'base64')
  }
}
