// The frame every console page shares: header with search and the account menu, main content, and the one
// stylesheet and script (served by the service; the page works without the script).
import { html, type Html, type HtmlValue } from '@boxyard/kit/web/html.ts';
import type { Principal } from '../auth/principal.ts';

export interface PageContext {
  principal: Principal | null;
  /** The URL path of this page (sign-in returns here). */
  path: string;
  search?: string;
}

export const ASSET_VERSION = '1';

export function layout(page: PageContext, title: string, content: HtmlValue): Html {
  const who = page.principal;
  const isAdmin = who?.kind === 'user' && who.isAdmin;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Boxyard boxes</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css?v=${ASSET_VERSION}">
<script type="module" src="/console/assets/console.js?v=${ASSET_VERSION}"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/">Boxyard boxes</a>
  <form class="search" role="search" method="get" action="/">
    <label class="visually-hidden" for="q">Search boxes</label>
    <input id="q" name="q" type="search" placeholder="Search boxes" value="${page.search ?? ''}">
    <button type="submit">Search</button>
  </form>
  <nav aria-label="Account">
    ${
      who
        ? html`${isAdmin ? html`<a href="/console/users">Users</a> <a href="/console/webhooks">Webhooks</a>` : null}
        <span class="who">${who.username}</span>
        <form method="post" action="/console/sign-out" class="inline"><button type="submit">Sign out</button></form>`
        : html`<a class="button" href="/console/sign-in?return_to=${encodeURIComponent(page.path)}">Sign in</a>`
    }
  </nav>
</header>
<main id="main">
${content}
</main>
<footer class="bottom"><a href="/api-docs">API</a></footer>
</body>
</html>
`;
}

/** A read-only value with a copy button (the button appears when scripts run). */
export function copyable(id: string, label: string, value: string): Html {
  return html`<div class="copyable">
  <span class="label" id="${id}-label">${label}</span>
  <pre id="${id}" aria-labelledby="${id}-label" tabindex="0">${value}</pre>
  <button type="button" class="copy" data-copy="${id}" hidden>Copy</button>
</div>`;
}

export const formatBytes = (bytes: number): string => {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]} (${bytes.toLocaleString('en')} bytes)`;
};

export const formatDate = (iso: string | null): string => (iso ? iso.slice(0, 10) : '—');

/** A form the script sends to the JSON API (method, URL) with the session cookie; needs scripts. */
export function apiForm(
  options: { method: string; action: string; label: string; next?: string; confirm?: string; className?: string; show?: string },
  fields: HtmlValue = null,
): Html {
  return html`<form class="api ${options.className ?? ''}" data-method="${options.method}" data-action="${options.action}"
  ${options.next ? html`data-next="${options.next}"` : null} ${options.confirm ? html`data-confirm="${options.confirm}"` : null} ${options.show ? html`data-show="${options.show}"` : null}>
  ${fields}
  <button type="submit">${options.label}</button>
  <p class="error" role="alert"></p>
</form>`;
}

export const needsScript = html`<noscript><p class="note">Browsing works without JavaScript; changing things here needs it.</p></noscript>`;
