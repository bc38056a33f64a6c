// Lint rules on top of the type-check (`make lint` runs both).
import js from '@eslint/js';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.boxyard/**', 'charts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Type-aware rules on the TypeScript sources (the browser scripts under public/ are plain JS without a project).
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      // no-unnecessary-condition was tried (266 findings on 2026-11-27) and is off: every finding was TypeScript's
      // narrowing lost across an await or a callback (`signal.aborted` re-read after awaiting), a teardown's
      // `service?.close()` for a `let` that beforeAll may never set, or a default for a field the type calls required
      // that the API server or an older object may not carry. None was a bug; removing those guards would make some.
    },
  },
  {
    // Tests read the loose JSON of the APIs they call (`body.data.items[0].name`): `any` is allowed there only.
    files: ['**/*.test.ts', 'test/**/*.ts', '**/testing/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // A swallowed error is handled, or dropped through the kit's ignoreError('why'), which logs it at debug.
    files: ['**/*.ts'],
    ignores: ['services/kit/src/errors/ignore-error.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...['BlockStatement[body.length=0]', 'Identifier[name="undefined"]', 'Literal[raw="null"]'].flatMap((body) =>
          [
            // .catch(() => {}) and .then(ok, () => {})
            'CallExpression[callee.property.name="catch"] > ArrowFunctionExpression',
            'CallExpression[callee.property.name="then"][arguments.length=2] > ArrowFunctionExpression:nth-child(2)',
          ].map((handler) => ({
            selector: `${handler} > ${body}.body`,
            message: "A swallowed error: handle it, or `.catch(ignoreError('why it is safe'))` from @boxyard/kit (logged at debug).",
          })),
        ),
      ],
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // No regular expression that can backtrack super-linearly (ReDoS): every service parses headers, paths and
    // bodies from anyone who can reach it, and one slow match stops the whole process (`serve all` hosts them all).
    // 'potential' also reports patterns whose worst case depends on how they are used; ignorePartial: false also
    // checks patterns that run unanchored (split, replace, search), where a quadratic move costs as much.
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential', ignorePartial: false, ignoreSticky: false }],
      'regexp/no-misleading-capturing-group': 'error',
    },
  },
);
