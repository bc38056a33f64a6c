// The frame every console page shares: head (stylesheet and module scripts from /-/assets, nothing inline), a
// top bar with who is signed in and the way in or out, and a status line the scripts announce results in.
// Sign-in and sign-out are plain forms, so they work without JavaScript.
import { escapeHtml } from '@boxyard/kit/web/html.ts';

export const CONSOLE_PREFIX = '/-';
export const ASSETS_PATH = `${CONSOLE_PREFIX}/assets`;
export const SIGN_IN_PATH = `${CONSOLE_PREFIX}/sign-in`;
export const SIGN_OUT_PATH = `${CONSOLE_PREFIX}/sign-out`;
export const KEYS_PATH = `${CONSOLE_PREFIX}/keys`;
export const SHARES_PATH = `${CONSOLE_PREFIX}/shares`;

const OIDC_LOGIN_PATH = '/auth/oidc/login';
const OIDC_LOGOUT_PATH = '/auth/oidc/logout';

export interface Viewer {
  username: string | null;
  /** How the viewer is signed in: a session can sign out here; Basic credentials stay until the browser forgets them. */
  via: 'session' | 'basic' | 'api-key' | 'provider' | 'anonymous' | 'share-link';
  /** Provider sign-in (auth.sign_in), when enabled. */
  signIn?: { displayName: string } | undefined;
  /** Where to come back to after signing in. */
  returnTo: string;
}

/** The provider's sign-in link (its markup is what the OIDC tests look for). */
export const providerSignInLink = (displayName: string, returnTo: string) =>
  `<a href="${escapeHtml(`${OIDC_LOGIN_PATH}?return_to=${encodeURIComponent(returnTo)}`)}">Sign in with ${escapeHtml(displayName)}</a>`;

export const signInHref = (returnTo: string) => `${SIGN_IN_PATH}?return_to=${encodeURIComponent(returnTo)}`;

/** Who is reading, and the way to sign in or out. Links tools could follow stay out of anonymous pages. */
function account(viewer: Viewer): string {
  if (!viewer.username) {
    // A form, not a link: wget and rclone walk links, and this is no part of the share.
    const password = `<form class="inline" method="get" action="${SIGN_IN_PATH}"><input type="hidden" name="return_to" value="${escapeHtml(viewer.returnTo)}"><button type="submit">Sign in</button></form>`;
    return viewer.signIn ? `<span>${providerSignInLink(viewer.signIn.displayName, viewer.returnTo)}</span> ${password}` : password;
  }
  // Only for a browser's session: tools signed in with Basic (wget --mirror) must not walk into the console.
  const keys = viewer.via === 'session' ? ` <a href="${SHARES_PATH}">Share links</a> <a href="${KEYS_PATH}">API keys</a>` : '';
  let signOut = '';
  if (viewer.via === 'session') {
    const action = viewer.signIn ? OIDC_LOGOUT_PATH : SIGN_OUT_PATH;
    signOut = ` <form class="inline" method="post" action="${action}"><button type="submit">Sign out</button></form>`;
  }
  return `<span class="who">Signed in as ${escapeHtml(viewer.username)}</span>${keys}${signOut}`;
}

export interface PageOptions {
  title: string;
  viewer: Viewer;
  /** Module scripts under /-/assets (progressive enhancement: the page works without them). */
  scripts?: string[];
  /** data-* attributes of <body>, read by the scripts. */
  data?: Record<string, string>;
  main: string;
  /** The page is itself the way in: the bar offers no second sign-in. */
  signInPage?: boolean;
}

export function renderPage(options: PageOptions): string {
  const scripts = (options.scripts ?? []).map((name) => `<script type="module" src="${ASSETS_PATH}/${name}"></script>\n`).join('');
  const data = Object.entries(options.data ?? {})
    .map(([name, value]) => ` data-${name}="${escapeHtml(value)}"`)
    .join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ASSETS_PATH}/console.css">
${scripts}</head>
<body${data}>
<header class="bar"><a class="brand" href="/">Boxyard files</a><span class="spacer"></span>${options.signInPage ? '' : account(options.viewer)}</header>
<main>
${options.main}
<p id="status" role="status" aria-live="polite"></p>
</main>
</body>
</html>
`;
}
