import type {ImageGenerator} from './index.js'

/** Gemini image generation: `generateContent` answering with an inline picture. */
export async function geminiImages(o: {apiKey: string; baseUrl: null | string; model: string}): Promise<ImageGenerator> {
  const {GoogleGenAI} = await import('@google/genai')
  const ai = new GoogleGenAI({apiKey: o.apiKey, ...(o.baseUrl ? {httpOptions: {baseUrl: o.baseUrl}} : {})})
  return async (prompt, shape) => {
    const ratio = shape.width / shape.height
    const aspectRatio = ratio > 1.5 ? '16:9' : ratio < 0.85 ? '4:5' : '1:1'
    const res = await ai.models.generateContent({config: {imageConfig: {aspectRatio}, responseModalities: ['IMAGE']}, contents: prompt, model: o.model})
    const part = res.candidates?.[0]?.content?.parts?.find((p) => p.inlineData?.data)
    if (!part?.inlineData?.data) throw new Error(`the model returned no picture${res.candidates?.[0]?.finishReason ? ` (${res.candidates[0].finishReason})` : ''}`)
    return Buffer.from(part.inlineData.data, 'base64')
  }
}
