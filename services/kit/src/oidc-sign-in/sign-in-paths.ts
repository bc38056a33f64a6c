// The sign-in routes' paths (plugin.ts describes them).
export const LOGIN_PATH = '/auth/oidc/login';
export const CALLBACK_PATH = '/auth/oidc/callback';
export const LOGOUT_PATH = '/auth/oidc/logout';
