// What a service prints when it created the first admin with a generated password: the one time it is shown.
export const adminCreatedNotice = (service: string, username: string, password: string): string =>
  `${service}: created the admin account '${username}' with the generated password\n\n` +
  `    username: ${username}\n    password: ${password}\n\n` +
  'It is shown only this once. Set admin.password (or BOXYARD_ADMIN__PASSWORD) to choose it instead.';
