import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['**/dist/**', '**/node_modules/**', '**/oclif.manifest.json', 'out/**', 'data/**', '.tmp/**']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        AbortController: 'readonly', Buffer: 'readonly', URL: 'readonly', clearInterval: 'readonly', clearTimeout: 'readonly',
        console: 'readonly', fetch: 'readonly', process: 'readonly', setInterval: 'readonly', setTimeout: 'readonly', setImmediate: 'readonly',
        TextEncoder: 'readonly', TextDecoder: 'readonly', performance: 'readonly', queueMicrotask: 'readonly', structuredClone: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none'}],
    },
  },
  {
    // The svc console's page script runs in the browser.
    files: ['plugins/svc/ui/**'],
    languageOptions: {globals: {Node: 'readonly', URLSearchParams: 'readonly', document: 'readonly', getComputedStyle: 'readonly', location: 'readonly', prompt: 'readonly'}},
  },
  {
    files: ['test/**', 'plugins/*/test/**', 'packages/*/test/**'],
    rules: {'@typescript-eslint/no-unused-expressions': 'off'},
  },
)
