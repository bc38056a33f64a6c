// Password rules: at least 8 characters, upper + lower case + a digit, and not a known common password
// (the list maintained by zxcvbn-ts). Returns every failing rule so a form can show them all at once.
import { dictionary } from '@zxcvbn-ts/language-common';

export interface PolicyFailure {
  rule: 'min_length' | 'uppercase' | 'lowercase' | 'digit' | 'common_password';
  detail: string;
}

export const MIN_PASSWORD_LENGTH = 8;
let common: Set<string> | undefined;
const commonPasswords = () => (common ??= new Set(dictionary['passwords-common'].map((p) => p.toLowerCase())));

export function checkPassword(password: string): PolicyFailure[] {
  const failures: PolicyFailure[] = [];
  if ([...password].length < MIN_PASSWORD_LENGTH) failures.push({ rule: 'min_length', detail: `must be at least ${MIN_PASSWORD_LENGTH} characters` });
  if (!/\p{Lu}/u.test(password)) failures.push({ rule: 'uppercase', detail: 'must contain an upper-case letter' });
  if (!/\p{Ll}/u.test(password)) failures.push({ rule: 'lowercase', detail: 'must contain a lower-case letter' });
  if (!/\p{Nd}/u.test(password)) failures.push({ rule: 'digit', detail: 'must contain a digit' });
  if (commonPasswords().has(password.toLowerCase())) failures.push({ rule: 'common_password', detail: 'is a commonly used password' });
  return failures;
}
