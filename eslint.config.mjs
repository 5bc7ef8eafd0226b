// ESLint: type-aware checks the compiler does not make. A floating promise is an error (an
// unawaited write or release fails silently); workflow files may not import Node built-ins or
// worker-side packages, as the Temporal samples do, since workflow code runs in a deterministic sandbox.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.venv/', 'extracts/', '.pg-extract/'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'workflow code runs in a sandbox: no Node built-ins' })),
          patterns: [
            { group: ['@temporalio/activity', '@temporalio/worker', 'pg', 'pg-copy-streams'], message: 'workflow code may not import worker-side packages' },
          ],
        },
      ],
    },
  },
);
