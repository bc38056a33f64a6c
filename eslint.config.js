// Lint rules on top of the type-check (`make lint` runs both).
import js from '@eslint/js';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '.boxyard/**', 'charts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
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
