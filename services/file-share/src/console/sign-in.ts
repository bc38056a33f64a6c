// The console's own password sign-in: a plain HTML form (no JavaScript needed) posting to /-/sign-in, which
// starts the same session as POST /auth/login/basic (the HttpOnly, Secure, SameSite=Strict auth_token cookie)
// and sends the browser back where it came from. Sign-out ends the session and clears the cookie.
import { safeReturnPath } from '@boxyard/kit/oidc-sign-in/return-to.ts';
import { escapeHtml } from '@boxyard/kit/web/html.ts';
import { providerSignInLink, renderPage, SIGN_IN_PATH, type Viewer } from './layout.ts';

/**
 * Where to go after signing in: a path on this site only (never `//host` or `/\host`, which leave it), percent-
 * encoded so it fits the Location header whatever characters it holds. The kit's rule, as for provider sign-in.
 */
export const safeReturnTo = (value: unknown): string => safeReturnPath(value);

export function signInForm(returnTo: string, error?: string): string {
  const alert = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>\n` : '';
  return `<form class="box sign-in" method="post" action="${SIGN_IN_PATH}">
${alert}<input type="hidden" name="return_to" value="${escapeHtml(safeReturnTo(returnTo))}">
<p><label for="username">Username</label><input id="username" name="username" autocomplete="username" required maxlength="256"></p>
<p><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024"></p>
<p><button type="submit">Sign in</button></p>
</form>`;
}

export function renderSignInPage(viewer: Viewer, error?: string): string {
  const provider = viewer.signIn ? `<p>${providerSignInLink(viewer.signIn.displayName, viewer.returnTo)}</p>\n` : '';
  return renderPage({
    title: 'Sign in',
    viewer: { ...viewer, username: null },
    signInPage: true,
    main: `<h1>Sign in</h1>\n${provider}${signInForm(viewer.returnTo, error)}`,
  });
}
