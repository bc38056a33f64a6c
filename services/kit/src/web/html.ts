// Server-rendered HTML with escaping by default: `html\`<p>${name}</p>\`` escapes every interpolated value; only a
// value made by `html` itself (or `raw`, for text the caller vouches for) is inserted as markup. Arrays are joined,
// and null, undefined and false render nothing, so conditionals and lists read naturally in templates.
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** Markup that is inserted as is. */
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0]!;
  values.forEach((value, i) => (out += render(value) + strings[i + 1]!));
  return new Html(out);
}

/** Trusted markup only: never pass anything a caller sent. */
export const raw = (markup: string): Html => new Html(markup);
