// The console's pages, rendered on the server from the same records the API serves. Forms that change something
// are sent by console.js to the JSON API (with the session cookie); everything readable works without scripts.
import { html, type Html } from '@boxyard/kit/web/html.ts';
import type { Organization, Box } from '../records.ts';
import { apiForm, copyable, formatBytes, formatDate, layout, needsScript, type PageContext } from './layout.ts';
import type { ListedBox, VersionEntry, allUsers, allWebhooks, latestDeliveries, membersOf, serviceAccountsOf } from './queries.ts';

const e = encodeURIComponent;
const orgApi = (org: string) => `/api/organization/${e(org)}`;
const boxApi = (org: string, box: string) => `${orgApi(org)}/box/${e(box)}`;
export const boxPage = (org: string, box: string) => `/${e(org)}/boxes/${e(box)}`;

const badge = (text: string, kind = '') => html`<span class="badge ${kind}">${text}</span>`;

function boxList(boxes: readonly ListedBox[], showOrg: boolean): Html {
  if (boxes.length === 0) return html`<p class="empty">No boxes here yet.</p>`;
  return html`<ul class="cards">${boxes.map(
    (item) => html`
  <li class="card">
    <h3><a href="${boxPage(item.org, item.b.name)}">${showOrg ? html`<span class="org">${item.org}/</span>` : null}${item.b.name}</a></h3>
    <p>${item.b.description || html`<span class="muted">No description</span>`}</p>
    <p class="meta">${item.latest ? html`Latest ${badge(`v${item.latest}`)}` : badge('no released version', 'muted')}
      ${item.b.is_public ? badge('public', 'ok') : badge('private', 'warn')}${item.b.published ? null : badge('draft', 'muted')}</p>
  </li>`,
  )}</ul>`;
}

/** First and next pages of a box list (keyset: the Next link names the box the page ended with). */
function pager(path: string, search: string | undefined, after: string | undefined, next: string | undefined): Html | null {
  if (!after && !next) return null;
  const link = (cursor?: string) => {
    const query = new URLSearchParams({ ...(search ? { q: search } : {}), ...(cursor ? { after: cursor } : {}) }).toString();
    return query ? `${path}?${query}` : path;
  };
  return html`<nav class="pager" aria-label="Pages">${after ? html`<a href="${link()}">First page</a>` : null}
    ${next ? html`<a href="${link(next)}" rel="next">Next</a>` : null}</nav>`;
}

export function homePage(
  page: PageContext,
  data: { boxes: readonly ListedBox[]; next: string | undefined; after: string | undefined; organizations: readonly { name: string; role: string | null }[] },
): Html {
  const isAdmin = page.principal?.kind === 'user' && page.principal.isAdmin;
  const title = page.search ? `Boxes matching “${page.search}”` : page.principal ? 'Boxes' : 'Public boxes';
  return layout(
    page,
    title,
    html`
<h1>${title}</h1>
${page.principal ? null : html`<p class="lead">Vagrant boxes hosted here. Sign in to see your organizations' private boxes.</p>`}
${boxList(data.boxes, true)}
${pager('/', page.search, data.after, data.next)}
${
  data.organizations.length > 0
    ? html`<section aria-labelledby="orgs"><h2 id="orgs">Your organizations</h2>
  <ul class="links">${data.organizations.map((o) => html`<li><a href="/${e(o.name)}">${o.name}</a>${o.role ? html` ${badge(o.role, 'muted')}` : null}</li>`)}</ul></section>`
    : null
}
${
  isAdmin
    ? html`<section aria-labelledby="new-org"><h2 id="new-org">New organization</h2>${needsScript}
  ${apiForm(
    { method: 'POST', action: '/api/organization', label: 'Create organization', next: '/{name}', className: 'stacked' },
    html`
    <label>Name <input name="name" required pattern="[A-Za-z0-9_\\-]{1,100}" autocomplete="off"></label>
    <label>Description <input name="description"></label>
    <label class="check"><input type="checkbox" name="is_public" checked> Public (its public boxes are listed for everyone)</label>`,
  )}</section>`
    : null
}`,
  );
}

export function organizationPage(
  page: PageContext,
  data: {
    org: Organization;
    role: string | null;
    isGlobalAdmin: boolean;
    boxes: readonly ListedBox[];
    next: string | undefined;
    after: string | undefined;
    members: Awaited<ReturnType<typeof membersOf>> | null;
    serviceAccounts: Awaited<ReturnType<typeof serviceAccountsOf>> | null;
  },
): Html {
  const { org } = data;
  const isMember = data.role !== null || data.isGlobalAdmin;
  const isOrgAdmin = data.role === 'admin' || data.isGlobalAdmin;
  const canManageMembers = isOrgAdmin || data.role === 'moderator';
  return layout(
    page,
    org.name,
    html`
<nav class="crumbs" aria-label="Breadcrumb"><a href="/">Boxes</a> › <span aria-current="page">${org.name}</span></nav>
<h1>${org.name} ${org.is_public ? null : badge('private organization', 'warn')}</h1>
${org.description ? html`<p class="lead">${org.description}</p>` : null}
${data.role ? html`<p>Your role: ${badge(data.role)}</p>` : null}
<section aria-labelledby="boxes"><h2 id="boxes">Boxes</h2>
${boxList(data.boxes, false)}
${pager(`/${e(org.name)}`, undefined, data.after, data.next)}
${
  isMember && page.principal
    ? html`<details class="panel"><summary>New box</summary>${needsScript}
  ${apiForm(
    { method: 'POST', action: `${orgApi(org.name)}/box`, label: 'Create box', next: `/${e(org.name)}/boxes/{name}`, className: 'stacked' },
    html`
    <label>Name <input name="name" required pattern="[A-Za-z0-9_\\-]{1,100}" autocomplete="off"></label>
    <label>Description <textarea name="description" rows="2"></textarea></label>
    <label class="check"><input type="checkbox" name="is_public"> Public: listed, and downloadable by anyone</label>`,
  )}</details>`
    : null
}
</section>
${
  data.members
    ? html`<section aria-labelledby="members"><h2 id="members">Members</h2>
<table><thead><tr><th scope="col">User</th><th scope="col">E-mail</th><th scope="col">Role</th>${canManageMembers ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : null}</tr></thead>
<tbody>${data.members.map(
        (m) => html`<tr><td>${m.username}</td><td>${m.email ?? '—'}</td><td>${m.role}</td>
  ${canManageMembers ? html`<td>${apiForm({ method: 'DELETE', action: `${orgApi(org.name)}/members/${e(m.username)}`, label: 'Remove', confirm: `Remove ${m.username} from ${org.name}?`, className: 'inline danger' })}</td>` : null}</tr>`,
      )}</tbody></table>
${
  canManageMembers
    ? html`<details class="panel"><summary>Add a member or change a role</summary>${needsScript}
  ${apiForm(
    { method: 'PUT', action: `${orgApi(org.name)}/members/{username}`, label: 'Save member' },
    html`
    <label>Username <input name="username" required data-path-only autocomplete="off"></label>
    <label>Role <select name="role"><option>user</option><option>moderator</option>${isOrgAdmin ? html`<option>admin</option>` : null}</select></label>`,
  )}</details>`
    : null
}
</section>`
    : null
}
${
  data.serviceAccounts
    ? html`<section aria-labelledby="service-accounts"><h2 id="service-accounts">Service accounts</h2>
<p class="note">Machine keys for CI and Vagrant (<code>VAGRANT_CLOUD_TOKEN</code>), acting in ${org.name} only.</p>
${
  data.serviceAccounts.length === 0
    ? html`<p class="empty">None yet.</p>`
    : html`<table><thead><tr><th scope="col">Name</th><th scope="col">Description</th><th scope="col">Role</th><th scope="col">Created by</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${data.serviceAccounts.map(
        (
          s,
        ) => html`<tr><td>${s.username}</td><td>${s.description}</td><td>${s.role}</td><td>${s.owner ?? '—'}</td><td>${formatDate(s.expires_at)}</td><td>${formatDate(s.last_used_at)}</td>
  <td>${apiForm({ method: 'DELETE', action: `/api/service-accounts/${s.id}`, label: 'Delete', confirm: `Delete ${s.username}? Its key stops working.`, className: 'inline danger' })}</td></tr>`,
      )}</tbody></table>`
}
<details class="panel"><summary>New service account</summary>${needsScript}
  ${apiForm(
    { method: 'POST', action: '/api/service-accounts', label: 'Create service account', show: 'token' },
    html`
    <input type="hidden" name="organization" value="${org.name}">
    <label>Description <input name="description" required></label>
    <label>Role <select name="role"><option>user</option><option>moderator</option></select></label>
    <label>Expires after (days, empty: never) <input name="expiration_days" type="number" min="1" max="3650" inputmode="numeric"></label>`,
  )}
  <div class="shown-once" hidden>
    <p><strong>Copy the key now: it is shown only once.</strong> Username <code data-field="username"></code></p>
    ${copyable('new-token', 'Key', '')}
  </div>
</details>
</section>`
    : null
}
${
  isOrgAdmin
    ? html`<section aria-labelledby="settings"><h2 id="settings">Settings</h2>${needsScript}
  ${apiForm(
    { method: 'PATCH', action: orgApi(org.name), label: 'Save organization', className: 'stacked' },
    html`
    <label>Description <input name="description" value="${org.description}"></label>
    <label>Contact e-mail <input name="email" type="email" value="${org.email ?? ''}"></label>
    <label class="check"><input type="checkbox" name="is_public" ${org.is_public ? 'checked' : ''}> Public organization</label>`,
  )}</section>`
    : null
}`,
  );
}

/** How CI publishes into this box: `vagrant cloud publish` and Packer's vagrant-cloud post-processor (cloud-api/). */
function publishSection(org: Organization, tag: string, baseUrl: string): Html {
  const publishLine = `VAGRANT_SERVER_URL=${baseUrl} VAGRANT_CLOUD_TOKEN=<key> vagrant cloud publish ${tag} 1.0.0 virtualbox package.box --release -f`;
  const packer = `post-processor "vagrant-cloud" {\n  box_tag           = "${tag}"\n  version           = "1.0.0"\n  vagrant_cloud_url = "${baseUrl}/api/v1"\n  access_token      = "<key>"\n}`;
  return html`<section aria-labelledby="publish"><h2 id="publish">Publish it</h2>
${copyable('publish-line', 'vagrant cloud publish', publishLine)}
${copyable('packer-snippet', 'Packer post-processor', packer)}
<p class="note"><code>&lt;key&gt;</code>: a service-account key of ${org.name} that may change this box (a moderator's, or the key that created it).</p>
</section>`;
}

/** Newest and older pages of a box's versions (keyset: each link names the version to continue after). */
function versionPager(path: string, olderThan: string | undefined, next: string | undefined): Html | null {
  if (!olderThan && !next) return null;
  return html`<nav class="pager" aria-label="Versions">${olderThan ? html`<a href="${path}">Newest versions</a>` : null}
    ${next ? html`<a href="${`${path}?older_than=${encodeURIComponent(next)}`}" rel="next">Older versions</a>` : null}</nav>`;
}

/** One page of a box's versions as the box page shows them: the rendered list, how many, where older ones continue. */
export interface VersionsSection {
  list: Html;
  count: number;
  next: string | undefined;
}

/** The versions of one page of a box's tree, with each one's manage panel when `canManage`. */
export function versionList(org: Organization, box: Box, versions: readonly VersionEntry[], canManage: boolean): Html {
  const api = boxApi(org.name, box.name);
  const statusKind: Record<string, string> = { active: 'ok', unreleased: 'muted', revoked: 'warn' };
  return html`${versions.map(({ version, providers }) => {
    const vApi = `${api}/version/${e(version.version_number)}`;
    return html`<article class="version" aria-labelledby="v-${version.id}">
  <header><h3 id="v-${version.id}">v${version.version_number}</h3> ${badge(version.status, statusKind[version.status])}
    <span class="muted">Created ${formatDate(version.created_at)}${formatDate(version.updated_at) !== formatDate(version.created_at) ? `, updated ${formatDate(version.updated_at)}` : ''}</span></header>
  ${version.description ? html`<p>${version.description}</p>` : null}
  ${
    providers.length === 0
      ? html`<p class="empty">No providers yet.</p>`
      : html`<table class="files"><thead><tr><th scope="col">Provider</th><th scope="col">Architecture</th><th scope="col">File</th><th scope="col">Size</th><th scope="col">SHA-256</th></tr></thead><tbody>
    ${providers.flatMap(({ provider, architectures }) =>
      (architectures.length === 0 ? [{ architecture: null, file: null }] : architectures).map(
        (entry) => html`<tr>
      <td>${provider.name}</td>
      <td>${entry.architecture ? html`${entry.architecture.name}${entry.architecture.default_box ? html` ${badge('default', 'muted')}` : null}` : html`<span class="muted">none</span>`}</td>
      <td>${entry.file ? html`<a href="${`/${e(org.name)}/boxes/${e(box.name)}/versions/${e(version.version_number)}/providers/${e(provider.name)}/${e(entry.architecture!.name)}/${e(entry.file.file_name)}`}">${entry.file.file_name}</a>` : html`<span class="muted">no file</span>`}</td>
      <td>${entry.file ? formatBytes(entry.file.size) : '—'}</td>
      <td class="hash">${entry.file ? html`<code>${entry.file.sha256}</code>` : '—'}</td></tr>`,
      ),
    )}
  </tbody></table>`
  }
  ${
    canManage
      ? html`<details class="panel"><summary>Manage v${version.version_number}</summary>${needsScript}
    <div class="actions">
      ${version.status !== 'active' ? apiForm({ method: 'PATCH', action: vApi, label: 'Release', className: 'inline' }, html`<input type="hidden" name="status" value="active">`) : null}
      ${version.status === 'active' ? apiForm({ method: 'PATCH', action: vApi, label: 'Revoke', confirm: `Revoke v${version.version_number}? Vagrant will no longer be offered it.`, className: 'inline' }, html`<input type="hidden" name="status" value="revoked">`) : null}
      ${apiForm({ method: 'DELETE', action: vApi, label: 'Delete version', confirm: `Delete v${version.version_number} and its files?`, className: 'inline danger' })}
    </div>
    ${apiForm({ method: 'PATCH', action: vApi, label: 'Save description' }, html`<label>Description <textarea name="description" rows="2">${version.description}</textarea></label>`)}
    ${apiForm(
      { method: 'POST', action: `${vApi}/provider`, label: 'Add provider' },
      html`
      <label>Provider <input name="name" required list="providers" placeholder="virtualbox" autocomplete="off"></label>`,
    )}
    ${providers.map(({ provider, architectures }) => {
      const pApi = `${vApi}/provider/${e(provider.name)}`;
      return html`<fieldset><legend>Provider ${provider.name}</legend>
      ${apiForm(
        { method: 'POST', action: `${pApi}/architecture`, label: 'Add architecture' },
        html`
        <label>Architecture <input name="name" required list="architectures" placeholder="amd64" autocomplete="off"></label>
        <label class="check"><input type="checkbox" name="default_box"> Default</label>`,
      )}
      ${apiForm({ method: 'PATCH', action: pApi, label: 'Save provider description' }, html`<label>Description <input name="description" value="${provider.description}"></label>`)}
      ${apiForm({ method: 'DELETE', action: pApi, label: `Delete provider ${provider.name}`, confirm: `Delete provider ${provider.name} and its files?`, className: 'inline danger' })}
      ${architectures.map(({ architecture, file }) => {
        const aApi = `${pApi}/architecture/${e(architecture.name)}`;
        return html`<div class="upload-row"><h4>${provider.name} / ${architecture.name}</h4>
        <form class="upload" data-action="${aApi}/file/upload">
          <label>Box file <input type="file" name="file" accept=".box,application/octet-stream" required></label>
          ${file ? html`<label class="check"><input type="checkbox" name="replace"> Replace the current file</label>` : null}
          <button type="submit">Upload</button>
          <progress max="100" value="0" hidden></progress>
          <p class="status" role="status" aria-live="polite"></p>
          <p class="error" role="alert"></p>
        </form>
        ${architecture.default_box ? null : apiForm({ method: 'PATCH', action: aApi, label: `Make ${architecture.name} the default`, className: 'inline' }, html`<input type="hidden" name="default_box" value="true" data-type="boolean">`)}
        ${apiForm({ method: 'DELETE', action: aApi, label: `Delete architecture ${architecture.name}`, confirm: `Delete architecture ${architecture.name} and its file?`, className: 'inline danger' })}
        </div>`;
      })}</fieldset>`;
    })}
  </details>`
      : null
  }
</article>`;
  })}`;
}

export function boxDetailPage(
  page: PageContext,
  data: {
    org: Organization;
    box: Box;
    versions: VersionsSection;
    olderThan: string | undefined;
    canManage: boolean;
    baseUrl: string;
  },
): Html {
  const { org, box, canManage } = data;
  const tag = `${org.name}/${box.name}`;
  const api = boxApi(org.name, box.name);
  const addLine = `VAGRANT_SERVER_URL=${data.baseUrl} vagrant box add ${tag}`;
  const vagrantfile = `Vagrant.configure("2") do |config|\n  config.vm.box = "${tag}"\n  config.vm.box_url = "${data.baseUrl}${api}/metadata"\nend`;
  return layout(
    page,
    tag,
    html`
<nav class="crumbs" aria-label="Breadcrumb"><a href="/">Boxes</a> › <a href="/${e(org.name)}">${org.name}</a> › <span aria-current="page">${box.name}</span></nav>
<h1>${tag}</h1>
<p class="meta">${box.is_public ? badge('public', 'ok') : badge('private', 'warn')}${box.published ? null : badge('draft', 'muted')}${box.guest_access ? badge('guest access', 'muted') : null}</p>
${box.description ? html`<p class="lead">${box.description}</p>` : null}
<section aria-labelledby="use"><h2 id="use">Use it</h2>
${copyable('add-line', 'Add the box', addLine)}
${copyable('vagrantfile', 'Vagrantfile', vagrantfile)}
${box.is_public ? null : html`<p class="note">A private box needs a key: set <code>VAGRANT_CLOUD_TOKEN</code> to a service-account key of ${org.name}.</p>`}
</section>
${canManage ? publishSection(org, tag, data.baseUrl) : null}<section aria-labelledby="versions"><h2 id="versions">Versions</h2>
${data.versions.count === 0 ? html`<p class="empty">${data.olderThan ? `No versions older than ${data.olderThan}.` : 'No versions yet.'}</p>` : null}
${data.versions.list}
${
  canManage
    ? html`<details class="panel"><summary>New version</summary>${needsScript}
  ${apiForm(
    { method: 'POST', action: `${api}/version`, label: 'Create version' },
    html`
    <label>Version (1.2.3, 20241101.1, 2.0.0.rc1) <input name="version_number" required maxlength="64" pattern="[0-9]+(\\.[0-9A-Za-z]+)*(-[0-9A-Za-z\\-]+(\\.[0-9A-Za-z\\-]+)*)?" placeholder="1.0.0" autocomplete="off"></label>
    <label>Description <textarea name="description" rows="2"></textarea></label>
    <label>Status <select name="status"><option value="unreleased">unreleased (members only until released)</option><option value="active">active (released)</option></select></label>`,
  )}
</details>
<datalist id="providers"><option value="virtualbox"><option value="libvirt"><option value="vmware_desktop"><option value="hyperv"><option value="parallels"><option value="docker"></datalist>
<datalist id="architectures"><option value="amd64"><option value="arm64"><option value="i386"></datalist>`
    : null
}
${versionPager(boxPage(org.name, box.name), data.olderThan, data.versions.next)}
</section>
${
  canManage
    ? html`<section aria-labelledby="box-settings"><h2 id="box-settings">Box settings</h2>${needsScript}
  ${apiForm(
    { method: 'PATCH', action: api, label: 'Save box', className: 'stacked' },
    html`
    <label>Description <textarea name="description" rows="3">${box.description}</textarea></label>
    <label class="check"><input type="checkbox" name="is_public" ${box.is_public ? 'checked' : ''}> Public: listed, and downloadable by anyone</label>
    <label class="check"><input type="checkbox" name="published" ${box.published ? 'checked' : ''}> Published (unpublished: a members-only draft)</label>
    <label class="check"><input type="checkbox" name="guest_access" ${box.guest_access ? 'checked' : ''}> Guest access: anyone with the URL may download it</label>`,
  )}
  ${apiForm({ method: 'DELETE', action: api, label: 'Delete box', confirm: `Delete ${tag} with all its versions and files?`, next: `/${e(org.name)}`, className: 'danger' })}
</section>`
    : null
}`,
  );
}

export function signInPage(page: PageContext, options: { returnTo: string; error?: string; username?: string }): Html {
  return layout(
    page,
    'Sign in',
    html`
<h1>Sign in</h1>
<form class="sign-in" method="post" action="/console/sign-in">
  <input type="hidden" name="return_to" value="${options.returnTo}">
  <label>Username <input name="username" autocomplete="username" required value="${options.username ?? ''}" autofocus></label>
  <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
  ${options.error ? html`<p class="error" role="alert">${options.error}</p>` : null}
</form>`,
  );
}

export function signUpPage(
  page: PageContext,
  options: { invitationToken?: string; organization?: string; username?: string; email?: string; error?: string },
): Html {
  return layout(
    page,
    'Create an account',
    html`
<h1>Create an account</h1>
${options.organization ? html`<p>You were invited to <strong>${options.organization}</strong>: your account joins it.</p>` : null}
<form class="sign-in" method="post" action="/console/sign-up">
  ${options.invitationToken ? html`<input type="hidden" name="invitation_token" value="${options.invitationToken}">` : null}
  <label>Username <input name="username" autocomplete="username" required pattern="[A-Za-z0-9_.\-]{1,64}" value="${options.username ?? ''}" autofocus></label>
  <label>E-mail <input name="email" type="email" autocomplete="email" required value="${options.email ?? ''}"></label>
  <label>Password <input name="password" type="password" autocomplete="new-password" required></label>
  <button type="submit">Create the account</button>
  ${options.error ? html`<p class="error" role="alert">${options.error}</p>` : null}
</form>
<p>Have an account? <a href="/console/sign-in">Sign in</a>.</p>`,
  );
}

export function usersPage(page: PageContext, users: Awaited<ReturnType<typeof allUsers>>): Html {
  return layout(
    page,
    'Users',
    html`
<nav class="crumbs" aria-label="Breadcrumb"><a href="/">Boxes</a> › <span aria-current="page">Users</span></nav>
<h1>Users</h1>
<table><thead><tr><th scope="col">User</th><th scope="col">E-mail</th><th scope="col">Role</th><th scope="col">Organizations</th><th scope="col">Created</th></tr></thead>
<tbody>${users.map((u) => html`<tr><td>${u.username}</td><td>${u.email ?? '—'}</td><td>${u.role}</td><td>${u.organizations || '—'}</td><td>${formatDate(u.created_at)}</td></tr>`)}</tbody></table>`,
  );
}

export function errorPage(page: PageContext, status: number, message: string): Html {
  const title = status === 404 ? 'Not found' : status === 401 ? 'Sign in required' : status === 403 ? 'Not allowed' : 'Something went wrong';
  return layout(
    page,
    title,
    html`<h1>${title}</h1><p>${message}</p>
${status === 401 ? html`<p><a class="button" href="/console/sign-in?return_to=${encodeURIComponent(page.path)}">Sign in</a></p>` : html`<p><a href="/">Back to the boxes</a></p>`}`,
  );
}

export function webhooksPage(
  page: PageContext,
  data: {
    events: readonly string[];
    webhooks: Awaited<ReturnType<typeof allWebhooks>>;
    deliveries: Awaited<ReturnType<typeof latestDeliveries>>;
  },
): Html {
  const statusKind: Record<string, string> = { delivered: 'ok', failed: 'warn', pending: 'muted' };
  return layout(
    page,
    'Webhooks',
    html`
<nav class="crumbs" aria-label="Breadcrumb"><a href="/">Boxes</a> › <span aria-current="page">Webhooks</span></nav>
<h1>Webhooks</h1>
<p class="note">Events are POSTed as <code>{event, data}</code>, signed with the webhook's secret (<code>x-boxyard-signature</code> and Standard Webhooks headers).</p>
${data.webhooks.length === 0 ? html`<p class="empty">No webhooks yet.</p>` : null}
${data.webhooks.map((hook) => {
  const deliveries = data.deliveries.filter((d) => d.webhook_id === hook.id);
  return html`<article class="version" aria-labelledby="hook-${hook.id}">
  <header><h2 id="hook-${hook.id}" class="url">${hook.url}</h2> ${hook.events.map((event) => badge(event, 'muted'))}</header>
  ${hook.description ? html`<p>${hook.description}</p>` : null}
  <h3>Latest deliveries</h3>
  ${
    deliveries.length === 0
      ? html`<p class="empty">None yet.</p>`
      : html`<table class="deliveries"><thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${deliveries.map(
    (d) => html`<tr><td>${d.event}</td><td>${badge(d.status, statusKind[d.status])}</td><td>${d.attempts}</td>
    <td>${d.last_status_code ?? d.last_error ?? '—'}</td><td>${d.created_at.slice(0, 19).replace('T', ' ')}</td>
    <td>${d.status === 'pending' ? null : apiForm({ method: 'POST', action: `/api/admin/webhooks/${hook.id}/deliveries/${d.id}/redeliver`, label: 'Redeliver', className: 'inline' })}</td></tr>`,
  )}</tbody></table>`
  }
  ${apiForm({ method: 'DELETE', action: `/api/admin/webhooks/${hook.id}`, label: 'Delete webhook', confirm: `Delete the webhook to ${hook.url} and its delivery log?`, className: 'danger' })}
</article>`;
})}
<section aria-labelledby="new-webhook"><h2 id="new-webhook">New webhook</h2>${needsScript}
<details class="panel" open><summary>Subscribe a URL</summary>
  ${apiForm(
    { method: 'POST', action: '/api/admin/webhooks', label: 'Create webhook', show: 'secret', className: 'stacked' },
    html`
    <label>URL <input name="url" type="url" required placeholder="https://ci.example.com/hooks/boxyard"></label>
    <fieldset><legend>Events</legend>${data.events.map((event) => html`<label class="check"><input type="checkbox" name="events" value="${event}" data-array checked> ${event}</label>`)}</fieldset>
    <label>Description <input name="description"></label>`,
  )}
  <div class="shown-once" hidden>
    <p><strong>Copy the signing secret now: it is shown only once.</strong> Reload the page to see the new webhook.</p>
    ${copyable('new-secret', 'Secret', '')}
  </div>
</details>
</section>`,
  );
}
