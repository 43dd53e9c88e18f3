// Lint of the TypeScript sources, run by `npm test` (see package.json "lint"). Type-aware rules
// catch what the compiler does not: promises nobody awaits or handles, promises passed where a
// callback's result is ignored, and code that nothing uses.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/generated/**', '.tools/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
    },
  },
  {
    // The emulator runs container processes for the runtime: it takes types from the runtime and is
    // handed the rest (registration callbacks, lookups), so the runtime imports the emulator and
    // never the other way round. It knows nothing of the kubelet or the gRPC server either.
    files: ['src/emulator/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [
          { regex: '^(\\.\\./)+runtime/', allowTypeImports: true, message: 'src/emulator takes only types from src/runtime; have the runtime pass the value in.' },
          { regex: '^(\\.\\./)+(kubelet|cri)/', message: 'src/emulator does not depend on the kubelet or the gRPC server.' },
        ],
      }],
    },
  },
  {
    // The runtime is the floor under the gRPC server and the kubelet: it imports neither.
    files: ['src/runtime/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(kubelet|cri|apiserver|kubectl|commands|demo)/', message: 'src/runtime is the bottom floor: it imports none of src/cri, src/apiserver, src/kubelet, src/kubectl or the commands.' }],
      }],
    },
  },
  {
    // Process tuning (src/tuning): the tricks behind plain interfaces (file calls, string table,
    // kept-config codec, node flags, JIT budget, idle collection). The floors receive them; it
    // imports none of them, only the shared top-level modules (tidy-up, log, bounded-cache).
    files: ['src/tuning/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(kubelet|kubectl|apiserver|cri|runtime|emulator|commands|demo)/', message: 'src/tuning sits below every floor: it imports none of them; a floor is handed the seam instead.' }],
      }],
    },
  },
  {
    // The three programs of the node side are floors: the API server's part (validation, admission,
    // RBAC, update rules, the cluster's objects) knows no kubelet; the kubelet (the node agent) may
    // ask the API server's part but never prints like kubectl; kubectl's part (printers, formats,
    // selectors, reports) sits on top of both. The commands wire the floors into programs.
    files: ['src/apiserver/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(kubelet|kubectl|cri|runtime|emulator|commands|demo)/', message: 'src/apiserver is the API server\'s part: it imports no kubelet, kubectl, runtime or command.' }],
      }],
    },
  },
  {
    files: ['src/kubelet/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(kubectl|commands|demo)/', message: 'src/kubelet is the node agent: it does not import kubectl\'s printers or the commands.' }],
      }],
    },
  },
  {
    files: ['src/cri/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(kubelet|kubectl|apiserver|commands|demo)/', message: 'src/cri is the gRPC edge of the runtime: it imports the runtime below it, nothing of the kubelet, kubectl, the API server or the commands.' }],
      }],
    },
  },
  {
    files: ['src/kubectl/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        patterns: [{ regex: '^(\\.\\./)+(commands|demo)/', message: 'src/kubectl is kubectl\'s part: the commands import it, not the other way round.' }],
      }],
    },
  },
  {
    // Tests read loosely typed data (parsed YAML, decoded requests) and use chai's property assertions.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', Buffer: 'readonly', performance: 'readonly' } },
  },
);
