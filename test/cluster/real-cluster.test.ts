// Boxyard on a real node, the way a platform team and its users meet it: `helm install` of the chart with the image
// `make image` built (two operator replicas, leader election on), the three example resources applied with kubectl
// and Ready with their pods really running; then the real clients through the Ingress hosts: `vagrant box add`,
// `wget --mirror` and curl, a terminal session in its own pod over a WebSocket; NetworkPolicy enforced; a helm
// upgrade that rolls every service; kill -9 of the leader; deletion with deletionPolicy Delete.
// PostgreSQL and MinIO are the harness's, on the node's bridge address, behind Services without selectors (as an
// external database and object store are reached from a cluster).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from '@boxyard/box-repository/testing/boxes.ts';
import { asciinemaCat } from '@boxyard/terminal/testing/asciinema.ts';
import { api, login, openTerminal, plain } from '@boxyard/terminal/testing/test-gateway.ts';
import { finished } from '../harness/child-output.ts';
import { NODE } from '../harness/node/network.ts';
import type { ReceivedSpan } from '../harness/otel-collector.ts';
import { backupDeleteRestore, scheduleKeepsRetention } from './backup-restore.ts';
import { HOSTS, NS, SYSTEM_NS, podReady, type BoxyardCluster, type Pod } from './boxyard-cluster.ts';
import { startDemo } from './demo.ts';
import { until } from './fixture.ts';
import { describeRoll, rollUnderTraffic } from './rolling-upgrade.ts';
import { describeWalkthrough } from './walkthrough.ts';
import { ignoreError } from '@boxyard/kit';

const run = promisify(execFile);
const VAGRANT = process.env.VAGRANT_BIN ?? '/usr/bin/vagrant';

describe.runIf(process.getuid?.() === 0)(
  'Boxyard on a real node (kubelet + containerd + CNI + kube-proxy + CoreDNS + Traefik + an iptables NetworkPolicy enforcer)',
  () => {
    let cluster: BoxyardCluster;
    // Shorthands for what every test uses.
    let dir: string, caFile: string, image: BoxyardCluster['image'];
    let kubectl: BoxyardCluster['kubectl'], s3: BoxyardCluster['s3'];
    let json: BoxyardCluster['json'], pods: BoxyardCluster['pods'], secretValue: BoxyardCluster['secretValue'], sql: BoxyardCluster['sql'];

    beforeAll(async () => {
      const log = (line: string) => console.log(`[real-cluster] ${line}`);
      // What `make demo` starts: the cluster, the chart, the three example resources Ready behind the Ingress.
      const demo = await startDemo(log);
      cluster = demo.cluster;
      ({ dir, caFile, image, kubectl, s3, json, pods, secretValue, sql } = cluster);
      log(
        `cluster ${cluster.timings.cluster} ms, helm install ${cluster.timings.helm} ms, everything answering through the Ingress ${demo.readyMs} ms after the start`,
      );
    }, 900_000);

    afterAll(async () => {
      await cluster?.stop();
    }, 120_000);

    it('runs the operator (2 replicas, one leader) and every service pod from the image, ready', async () => {
      // Both replicas ready (a readiness probe may miss once on a loaded machine: wait for it, then look closer).
      const operators = await until(
        'two ready operator replicas',
        async () => {
          const found = await pods('app.kubernetes.io/name=boxyard', SYSTEM_NS);
          return found.length === 2 && found.every(podReady) ? found : undefined;
        },
        60_000,
      ).catch(async (error: unknown) => {
        const found = await pods('app.kubernetes.io/name=boxyard', SYSTEM_NS);
        throw new Error(
          `${(error as Error).message}: ${JSON.stringify(found.map((p) => ({ name: p.metadata.name, phase: p.status.phase, conditions: p.status.conditions, containers: p.status.containerStatuses })))}`,
        );
      });
      expect(operators).toHaveLength(2);
      const lease = await json<{ spec: { holderIdentity?: string } }>(['get', 'lease', '-n', SYSTEM_NS, 'boxyard']);
      expect(operators.map((p) => p.metadata.name)).toContain(lease.spec.holderIdentity);

      const services = await pods('app.kubernetes.io/part-of=boxyard,app.kubernetes.io/component=server');
      expect(services.map((p) => p.metadata.labels?.['app.kubernetes.io/name']).sort()).toEqual(['box-repository', 'box-repository', 'file-share', 'terminal']);
      for (const pod of services) {
        expect(podReady(pod), pod.metadata.name).toBe(true);
        expect(pod.spec.containers[0]!.image).toBe(image.image);
      }
      // Through the Ingress: the controller picks up a new Ingress and its endpoints within seconds, not at once.
      for (const host of Object.values(HOSTS)) {
        await until(
          `https://${host}/health/ready to answer 200`,
          async () => ((await fetch(`https://${host}/health/ready`)).status === 200 ? true : undefined),
          30_000,
        );
      }
    });

    it("lets a namespace's editors change the kinds through Kubernetes' own `edit` role, and viewers read them", async () => {
      await kubectl(['create', 'rolebinding', 'developers-edit', '--clusterrole=edit', '--user=dev-editor', '-n', NS]);
      await kubectl(['create', 'rolebinding', 'developers-view', '--clusterrole=view', '--user=dev-viewer', '-n', NS]);
      const canI = (user: string, namespace: string, ...what: string[]) =>
        kubectl(['auth', 'can-i', ...what, `--as=${user}`, '-n', namespace]).then(
          (out) => out.trim(),
          () => 'no',
        );
      // The clusterrole-aggregation controller copies the chart's rules into edit and view shortly after install.
      await until(
        "edit to hold the chart's rules",
        async () => ((await canI('dev-editor', NS, 'create', 'boxrepositories.boxyard.io')) === 'yes' ? true : undefined),
        60_000,
      );
      for (const kind of ['boxrepositories', 'fileshares', 'terminalpools']) {
        expect(await canI('dev-editor', NS, 'patch', `${kind}.boxyard.io`), kind).toBe('yes');
        expect(await canI('dev-editor', NS, 'patch', `${kind}.boxyard.io`, '--subresource=status'), `${kind}/status`).toBe('no');
        expect(await canI('dev-editor', 'default', 'create', `${kind}.boxyard.io`), `${kind} in another namespace`).toBe('no');
        expect(await canI('dev-viewer', NS, 'get', `${kind}.boxyard.io`), kind).toBe('yes');
        expect(await canI('dev-viewer', NS, 'create', `${kind}.boxyard.io`), kind).toBe('no');
      }
    });

    it('serves `vagrant box add` of a public and of a private box through the BoxRepository Ingress', async () => {
      const base = `https://${HOSTS.boxes}`;
      const password = await secretValue('boxes-box-repository-admin', 'password');
      const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const response = await fetch(`${base}${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...headers },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> };
      };
      const signin = await call('POST', '/api/auth/signin', { username: 'admin', password });
      expect(signin.status).toBe(200);
      const auth = { authorization: `Bearer ${signin.body.access_token as string}` };
      expect((await call('POST', '/api/organization', { name: 'acme' }, auth)).status).toBe(201);
      const publish = async (box: string, isPublic: boolean) => {
        const root = `/api/organization/acme/box`;
        expect((await call('POST', root, { name: box, isPublic }, auth)).status).toBe(201);
        expect((await call('POST', `${root}/${box}/version`, { versionNumber: '1.0.0' }, auth)).status).toBe(201);
        expect((await call('POST', `${root}/${box}/version/1.0.0/provider`, { name: 'virtualbox' }, auth)).status).toBe(201);
        expect((await call('POST', `${root}/${box}/version/1.0.0/provider/virtualbox/architecture`, { name: 'amd64' }, auth)).status).toBe(201);
        const uploaded = await fetch(`${base}${root}/${box}/version/1.0.0/provider/virtualbox/architecture/amd64/file/upload`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/octet-stream', 'x-file-name': 'vagrant.box' },
          body: await makeBox(),
        });
        expect(uploaded.status, await uploaded.clone().text()).toBeLessThan(300);
      };
      await publish('public-box', true);
      await publish('private-box', false);
      const key = await call('POST', '/api/service-accounts', { organization: 'acme', description: 'vagrant in CI' }, auth);
      expect(key.status).toBe(201);

      const home = await mkdtemp(join(dir, 'vagrant-'));
      const vagrant = (args: string[], env: Record<string, string> = {}) =>
        finished(
          spawn(VAGRANT, args, {
            env: {
              PATH: process.env.PATH ?? '/usr/bin:/bin',
              HOME: home,
              VAGRANT_HOME: join(home, 'vagrant.d'),
              VAGRANT_CHECKPOINT_DISABLE: '1',
              VAGRANT_SERVER_URL: base,
              SSL_CERT_FILE: caFile,
              CURL_CA_BUNDLE: caFile,
              ...env,
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        );
      const added = await vagrant(['box', 'add', 'acme/public-box', '--cacert', caFile]);
      expect(added.code, added.output).toBe(0);
      expect(added.output).toContain("Successfully added box 'acme/public-box' (v1.0.0) for 'virtualbox'");
      const refused = await vagrant(['box', 'add', 'acme/private-box', '--cacert', caFile]);
      expect(refused.code).not.toBe(0);
      const privateAdded = await vagrant(['box', 'add', 'acme/private-box', '--cacert', caFile], { VAGRANT_CLOUD_TOKEN: key.body.token as string });
      expect(privateAdded.code, privateAdded.output).toBe(0);
      expect((await vagrant(['box', 'list'])).output).toMatch(/acme\/private-box\s+\(virtualbox, 1\.0\.0\)/);
    }, 180_000);

    it('takes a curl upload and serves `wget --mirror` of a folder through the FileShare Ingress', async () => {
      const password = await secretValue('files-file-share-admin', 'password');
      const work = await mkdtemp(join(dir, 'files-'));
      const files = { 'a.txt': 'alpha\n', 'nested/b.bin': randomBytes(100_000).toString('base64') };
      for (const [name, content] of Object.entries(files)) {
        await mkdir(join(work, 'src', name, '..'), { recursive: true });
        await writeFile(join(work, 'src', name), content);
        const { stdout } = await run('curl', [
          '-sS',
          '--cacert',
          caFile,
          '-u',
          `admin:${password}`,
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          '-F',
          `file=@${join(work, 'src', name)}`,
          `https://${HOSTS.files}/docs/${name}`,
        ]);
        expect(stdout, name).toBe('201');
      }
      await run('wget', [
        '--mirror',
        '--no-parent',
        '--no-host-directories',
        '-e',
        'robots=off',
        '--ca-certificate',
        caFile,
        '--user=admin',
        `--password=${password}`,
        '-P',
        join(work, 'mirror'),
        `https://${HOSTS.files}/docs/`,
      ]).catch((e: Error & { stderr?: string }) => {
        throw new Error(`wget --mirror failed: ${e.stderr ?? e.message}`);
      });
      for (const [name, content] of Object.entries(files)) expect(await readFile(join(work, 'mirror', 'docs', name), 'utf8'), name).toBe(content);
    }, 120_000);

    describe('terminal sessions in their own pods', () => {
      const base = `https://${HOSTS.shells}`;
      let cookie: string;

      const startSession = async (name: string) => {
        const startedAt = Date.now();
        const response = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: name }, origin: base });
        expect(response.status, JSON.stringify(response.json)).toBe(200);
        return { ...(response.json.data as { session: { id: string }; websocket_path: string }), ms: Date.now() - startedAt };
      };
      const sessionPod = async (id: string) => (await pods(`boxyard.io/session=${id}`))[0];

      beforeAll(async () => {
        // Traefik may not route the Ingress yet when this runs first (a filtered run): 404 until it does.
        const password = await secretValue('shells-terminal-admin', 'password');
        cookie = await until('the terminal Ingress to route', () => login(base, 'admin', password).catch(ignoreError('not routed yet: tried again')), 60_000);
      });

      it('starts a pod from the image that runs the agent; the WebSocket echoes 42; stop removes the pod', async () => {
        const session = await startSession('e2e-one');
        const pod = await sessionPod(session.session.id);
        expect(pod && podReady(pod)).toBe(true);
        expect(pod!.spec.containers[0]!.image).toBe(image.image);

        const terminal = await openTerminal(base, session.websocket_path, { cookie, origin: base });
        terminal.type('echo $((6*7))\r');
        await terminal.waitFor(/^42$/m, 30_000);
        // The session user has a name in the image (uid 1000 `user`): whoami answers, the prompt is not "I have no name!".
        terminal.type('echo me=$(whoami)\r');
        expect(await terminal.waitFor(/^me=\S*$/m, 30_000)).toMatch(/^me=user$/m);
        expect(terminal.output()).not.toContain('I have no name!');
        await terminal.close();

        const stopped = await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
        expect(stopped.status).toBe(200);
        await until('the session pod to be gone', async () => ((await sessionPod(session.session.id)) ? undefined : true), 60_000);
      }, 180_000);

      it('creates session pods with the gateway’s own ServiceAccount, and keeps working after the gateway restarts', async () => {
        const [gateway] = await pods('app.kubernetes.io/name=terminal,app.kubernetes.io/instance=shells');
        expect(gateway!.spec.serviceAccountName).toBe('shells-terminal');
        // A restarted gateway finds its NetworkPolicy in place and must replace it (Role: update), then start pods.
        await kubectl(['delete', 'pod', '-n', NS, gateway!.metadata.name, '--wait=true']);
        await kubectl(['rollout', 'status', '-n', NS, 'deployment/shells-terminal', '--timeout=180s']);
        await until('the new gateway to answer', async () => ((await fetch(`${base}/health/ready`)).status === 200 ? true : undefined));
        cookie = await login(base, 'admin', await secretValue('shells-terminal-admin', 'password'));
        const session = await startSession('e2e-two');
        await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
      }, 300_000);

      it('enforces the NetworkPolicy: only the gateway reaches an agent', async () => {
        const session = await startSession('e2e-policy');
        const pod = (await sessionPod(session.session.id))!;
        const target = `${pod.status.podIP}`;
        const probe = `const s=require('net').connect(7681,'${target}');s.setTimeout(3000);s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('timeout',()=>{console.log('timeout');process.exit(2)});s.on('error',e=>{console.log(e.code);process.exit(3)})`;
        const [gateway] = await pods('app.kubernetes.io/name=terminal,app.kubernetes.io/instance=shells');
        const fromGateway = await kubectl(['exec', '-n', NS, gateway!.metadata.name, '--', 'node', '-e', probe]);
        expect(fromGateway.trim()).toBe('connected');

        await kubectl([
          'run',
          'intruder',
          '-n',
          NS,
          `--image=${image.image}`,
          '--image-pull-policy=Never',
          '--restart=Never',
          '--labels=app=intruder',
          '--command',
          '--',
          'node',
          '-e',
          probe,
        ]);
        const phase = await until(
          'the intruder pod to finish',
          async () => {
            const p = await json<Pod>(['get', 'pod', '-n', NS, 'intruder']);
            return p.status.phase === 'Succeeded' || p.status.phase === 'Failed' ? p.status.phase : undefined;
          },
          60_000,
        );
        const logs = await kubectl(['logs', '-n', NS, 'intruder']);
        expect({ phase, logs: logs.trim() }).toEqual({ phase: 'Failed', logs: 'timeout' });
        await kubectl(['delete', 'pod', '-n', NS, 'intruder', '--wait=false']);
        await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
      }, 180_000);

      it('keeps the agent’s key and the gateway’s OTEL_* settings out of the shell’s reach (/proc/1/environ)', async () => {
        const session = await startSession('e2e-environ');
        const pod = await json<{ spec: { containers: { env?: { name: string }[] }[] } }>(['get', 'pod', '-n', NS, `boxyard-term-${session.session.id}`]);
        // What there is to keep: the agent's key, and the collector settings the gateway passes on.
        const names = (pod.spec.containers[0]!.env ?? []).map((e) => e.name);
        expect(names.some((name) => name.startsWith('BOXYARD_AGENT_'))).toBe(true);
        expect(names.some((name) => name.startsWith('OTEL_'))).toBe(true);

        const terminal = await openTerminal(base, session.websocket_path, { cookie, origin: base });
        terminal.type("echo uid=$(id -u); tr '\\0' '\\n' < /proc/1/environ; ls /proc/1/fd; head -c 16 /proc/1/mem; echo done-$((6*7))\r");
        const seen = await terminal.waitFor(/^done-42$/m, 30_000);
        await terminal.close();
        expect(seen).toMatch(/^uid=[1-9][0-9]*$/m); // not root
        expect(seen).toMatch(/\/proc\/1\/environ: Permission denied/);
        expect(seen).toMatch(/\/proc\/1\/fd.*Permission denied/);
        expect(seen).toMatch(/\/proc\/1\/mem.*Permission denied/);
        expect(seen).not.toMatch(/BOXYARD_AGENT_|OTEL_/);
        await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
      }, 180_000);

      it('does not attach to another pod at the session’s address: it gets no keystrokes, no credential', async () => {
        const session = await startSession('e2e-takeover');
        const id = session.session.id;
        // Another pod listening on the agent port, logging every byte it receives: the IP a dead session pod had may
        // go to any pod. The session record is pointed at it, as such a takeover would leave it.
        const listener =
          "require('net').createServer((s)=>s.on('data',(d)=>console.log('GOT '+JSON.stringify(d.toString())))).listen(7681,()=>console.log('listening'))";
        await kubectl([
          'run',
          'taker',
          '-n',
          NS,
          `--image=${image.image}`,
          '--image-pull-policy=Never',
          '--restart=Never',
          '--labels=app=taker',
          '--command',
          '--',
          'node',
          '-e',
          listener,
        ]);
        try {
          const taker = await until(
            'the other pod to listen',
            async () => {
              const p = await json<Pod>(['get', 'pod', '-n', NS, 'taker']);
              return p.status.podIP && (await kubectl(['logs', '-n', NS, 'taker']).catch(() => '')).includes('listening') ? p : undefined;
            },
            60_000,
          );
          const schema = String((await sql("select table_schema from information_schema.tables where table_name = 'terminal_sessions'"))[0]?.table_schema);
          await sql(`update "${schema}".terminal_sessions set agent_address = '${taker.status.podIP}:7681' where id = '${id}'`);

          const terminal = await openTerminal(base, session.websocket_path, { cookie, origin: base });
          terminal.type('typed-password-123\r');
          expect(await terminal.closed).toMatchObject({ code: 4500 });
          const logs = await kubectl(['logs', '-n', NS, 'taker']);
          expect(logs).not.toMatch(/typed-password|authorization|attach/i);
        } finally {
          await kubectl(['delete', 'pod', '-n', NS, 'taker', '--wait=false']).catch(ignoreError('teardown: the pod may be gone'));
          await api(base, 'DELETE', `/api/terminal/sessions/${id}/stop`, { cookie, origin: base });
        }
      }, 180_000);

      // Not run by the session that wrote it (it had no real node): the pool records (recording.mode on, to the
      // gateway pod's /tmp), and asciinema cat reads the pod session's recording back with its 42.
      it('records a pod session as asciicast that asciinema cat reads back', async () => {
        await kubectl(['patch', 'terminalpool', 'shells', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { recording: { mode: 'on' } } })]);
        // The operator rolls the gateway out with the new config; a recording gateway says so on attach.
        const { session, terminal } = await until(
          'a gateway that records',
          async () => {
            await kubectl(['rollout', 'status', '-n', NS, 'deployment/shells-terminal', '--timeout=180s']);
            cookie = await login(base, 'admin', await secretValue('shells-terminal-admin', 'password'));
            const started = await startSession(`e2e-recorded-${Date.now()}`);
            const client = await openTerminal(base, started.websocket_path, { cookie, origin: base });
            await new Promise((r) => setTimeout(r, 1000));
            if (client.controls.some((c) => c.type === 'notice')) return { session: started, terminal: client };
            await client.close();
            await api(base, 'DELETE', `/api/terminal/sessions/${started.session.id}/stop`, { cookie, origin: base });
            return undefined;
          },
          180_000,
        );
        terminal.type('echo $((6*7))\r');
        await terminal.waitFor(/^42$/m, 30_000);
        await terminal.close();
        await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
        await until(
          'the recording to be complete',
          async () =>
            (await api(base, 'GET', `/api/terminal/recordings/${session.session.id}`, { cookie })).json.data?.recording?.state === 'complete' || undefined,
          30_000,
        );
        const cast = await (await fetch(`${base}/api/terminal/recordings/${session.session.id}/cast`, { headers: { cookie } })).text();
        const file = join(dir, 'pod-session.cast');
        await writeFile(file, cast);
        expect(
          plain(await asciinemaCat(file, dir))
            .split(/\r?\n/)
            .map((line) => line.trim()),
        ).toContain('42');
      }, 240_000);
      it('keeps a user’s home across sessions with sessionPod.home: a PVC from the local-path provisioner, mounted in each new pod', async () => {
        // The gateway runs the new config once only new, ready gateway pods are left (the old one may still answer).
        const gatewayPods = () => pods('app.kubernetes.io/name=terminal,app.kubernetes.io/instance=shells');
        const rollout = async (old: string[]) => {
          await until(
            'only new gateway pods, ready',
            async () => {
              const current = await gatewayPods();
              return current.length > 0 && current.every((p) => !old.includes(p.metadata.name) && !p.metadata.deletionTimestamp && podReady(p))
                ? true
                : undefined;
            },
            180_000,
          );
          // Traefik follows the endpoints a while later (502/504 until then, or for some requests only: it may still
          // hold the old pod's address beside the new one): five sign-ins in a row must pass.
          const password = await secretValue('shells-terminal-admin', 'password');
          let streak = 0;
          await until(
            'the new gateway, alone behind the Ingress',
            async () => {
              const signedIn = await login(base, 'admin', password).catch(ignoreError('not routed yet: tried again'));
              streak = signedIn ? streak + 1 : 0;
              if (signedIn) cookie = signedIn;
              return streak >= 5 ? true : undefined;
            },
            180_000,
          );
        };
        const diagnose = async () => {
          for (const args of [
            ['get', 'pvc,pods', '-n', NS, '-o', 'wide'],
            ['get', 'events', '-n', NS, '--sort-by=.lastTimestamp'],
            ['logs', '-n', NS, 'deployment/shells-terminal', '--tail=40'],
          ]) {
            console.log(`[home] kubectl ${args.join(' ')}\n${await kubectl(args).catch((e: unknown) => String(e))}`);
          }
        };
        const before = (await gatewayPods()).map((p) => p.metadata.name);
        await kubectl([
          'patch',
          'terminalpool',
          'shells',
          '-n',
          NS,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { sessionPod: { home: { size: '64Mi' } } } }),
        ]);
        let homePods: string[] = [];
        try {
          await rollout(before);
          homePods = (await gatewayPods()).map((p) => p.metadata.name);
          const inSession = async (name: string, command: string) => {
            const session = await startSession(name);
            const terminal = await openTerminal(base, session.websocket_path, { cookie, origin: base });
            terminal.type(`${command}; echo done-$((6*7))\r`);
            const seen = await terminal.waitFor(/^done-42$/m, 30_000);
            await terminal.close();
            const pod = await sessionPod(session.session.id);
            await api(base, 'DELETE', `/api/terminal/sessions/${session.session.id}/stop`, { cookie, origin: base });
            await until('the session pod to be gone', async () => ((await sessionPod(session.session.id)) ? undefined : true), 60_000);
            return { seen, pod: pod!.metadata.name };
          };
          const first = await inSession('e2e-home-1', 'echo "$HOME"; echo kept-across-pods > ~/note.txt; ls -ld ~');
          expect(first.seen).toMatch(/^\/home\/user$/m);
          const second = await inSession('e2e-home-2', 'cat ~/note.txt');
          expect(second.pod).not.toBe(first.pod);
          expect(second.seen).toMatch(/^kept-across-pods$/m);

          void diagnose;
          const claims = await json<{
            items: { metadata: { name: string; labels: Record<string, string> }; status: { phase: string }; spec: { storageClassName: string } }[];
          }>(['get', 'pvc', '-n', NS, '-l', 'app.kubernetes.io/component=terminal-home']);
          expect(claims.items).toHaveLength(1);
          expect(claims.items[0]).toMatchObject({
            status: { phase: 'Bound' },
            spec: { storageClassName: 'local-path' },
            metadata: { labels: { 'boxyard.io/pool': 'shells' } },
          });
        } catch (error) {
          await diagnose();
          throw error;
        } finally {
          await kubectl(['patch', 'terminalpool', 'shells', '-n', NS, '--type=merge', '-p', JSON.stringify({ spec: { sessionPod: { home: null } } })]);
          await rollout(homePods).catch(ignoreError('teardown: pods being replaced'));
        }
      }, 600_000);
    });

    it('lets a shell reach DNS, but neither other pods, Services nor the cloud metadata address (session egress policy)', async () => {
      const base = `https://${HOSTS.shells}`;
      const cookie = await login(base, 'admin', await secretValue('shells-terminal-admin', 'password'));
      const started = await api(base, 'POST', '/api/terminal/start', { cookie, body: { terminal_cookie: 'e2e-egress' }, origin: base });
      expect(started.status, JSON.stringify(started.json)).toBe(200);
      const id = (started.json.data as { session: { id: string } }).session.id;
      const [session] = await pods(`boxyard.io/session=${id}`);
      expect(session!.metadata.labels?.['boxyard.io/pool']).toBe('shells');
      const [box] = await pods('app.kubernetes.io/name=box-repository');
      const service = await json<{ spec: { clusterIP: string } }>(['get', 'service', '-n', NS, 'boxes-box-repository']);
      // One probe per target: DNS lookup, or a TCP connect that reports connected / timeout / an error code.
      const probe = (targets: [string, number][]) => `const net=require('net');const dns=require('dns');
      const tcp=([h,p])=>new Promise(r=>{const s=net.connect(p,h);s.setTimeout(3000);s.on('connect',()=>{s.destroy();r('connected')});s.on('timeout',()=>{s.destroy();r('timeout')});s.on('error',e=>r(e.code))});
      Promise.all([new Promise(r=>dns.lookup('boxes-box-repository.${NS}.svc.cluster.local',(e,a)=>r(e?e.code:'resolved'))),...${JSON.stringify(targets)}.map(tcp)]).then(o=>console.log(JSON.stringify(o)))`;
      const targets: [string, number][] = [
        [box!.status.podIP!, 3000],
        [service.spec.clusterIP, 80],
        ['169.254.169.254', 80],
      ];
      const fromShell = JSON.parse(await kubectl(['exec', '-n', NS, session!.metadata.name, '-c', 'agent', '--', 'node', '-e', probe(targets)])) as string[];
      const [gateway] = await pods('app.kubernetes.io/name=terminal,app.kubernetes.io/instance=shells');
      const fromGateway = JSON.parse(await kubectl(['exec', '-n', NS, gateway!.metadata.name, '--', 'node', '-e', probe(targets.slice(0, 2))])) as string[];
      // The gateway (no egress policy) reaches the box repository; the shell does not, and resolves names all the same.
      expect(fromGateway).toEqual(['resolved', 'connected', 'connected']);
      expect(fromShell[0]).toBe('resolved');
      expect(fromShell.slice(1)).not.toContain('connected');
      expect(fromShell.slice(1, 3)).toEqual(['timeout', 'timeout']);
      await api(base, 'DELETE', `/api/terminal/sessions/${id}/stop`, { cookie, origin: base });
    }, 180_000);

    it('sends traces from the operator and every service pod to the collector the chart names (OTEL_* passed on by the operator)', async () => {
      const live = async (selector: string, namespace?: string) => new Set((await pods(selector, namespace)).map((p) => p.metadata.name));
      const operators = await live('app.kubernetes.io/name=boxyard', SYSTEM_NS);
      const services = await live('app.kubernetes.io/part-of=boxyard,app.kubernetes.io/component=server');
      const below = (spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] => {
        const children = spans.filter((s) => s.traceId === root.traceId && s.parentSpanId === root.spanId);
        return [...children, ...children.flatMap((c) => below(spans, c))];
      };
      const found = await until(
        'spans from the operator and the three services, sent from their pods',
        async () => {
          const spans = cluster.collector.spans();
          const fromPod = (service: string, pods: Set<string>) => spans.filter((s) => s.service === service && pods.has(String(s.resource['k8s.pod.name'])));
          const reconcile = fromPod('boxyard-operator', operators).find(
            (s) => s.name === 'reconcile BoxRepository' && below(spans, s).some((c) => c.kind === 3),
          );
          // The box downloads of the vagrant test: a server span with the S3 read inside it.
          const download = fromPod('boxyard-box-repository', services).find((s) => s.kind === 2 && below(spans, s).some((c) => c.name === 'S3.GetObject'));
          const files = fromPod('boxyard-file-share', services).find(
            (s) => s.kind === 2 && below(spans, s).some((c) => c.attributes['db.system.name'] === 'postgresql'),
          );
          // A session start: the gateway's request with the session pod's creation (a Kubernetes API call) inside.
          const start = fromPod('boxyard-terminal', services).find(
            (s) => s.kind === 2 && s.attributes['http.route'] === '/api/terminal/start' && below(spans, s).some((c) => c.name === 'create pods'),
          );
          return reconcile && download && files && start ? { reconcile, download, files, start } : undefined;
        },
        60_000,
      ).catch((error: unknown) => {
        const seen = new Map<string, number>();
        for (const s of cluster.collector.spans())
          seen.set(
            `${s.service} ${String(s.resource['k8s.pod.name'] ?? '-')} ${s.name}`,
            (seen.get(`${s.service} ${String(s.resource['k8s.pod.name'] ?? '-')} ${s.name}`) ?? 0) + 1,
          );
        throw new Error(`${(error as Error).message}\nspans received (service pod name: count):\n${[...seen].map(([k, n]) => `${k}: ${n}`).join('\n')}`);
      });
      expect(found.reconcile.resource).toMatchObject({ 'k8s.namespace.name': SYSTEM_NS });
      expect(found.download.resource).toMatchObject({
        'k8s.namespace.name': NS,
        'k8s.deployment.name': 'boxes-box-repository',
        'boxyard.resource.kind': 'BoxRepository',
      });
      expect(found.start.attributes).toMatchObject({ 'http.response.status_code': 200 });
      expect(below(cluster.collector.spans(), found.start).find((c) => c.name === 'create pods')).toMatchObject({
        kind: 3,
        attributes: { 'k8s.namespace.name': NS },
      });
    }, 120_000);

    it('rolls every service with no failed request: helm upgrade to another image tag, then kubectl rollout restart', async () => {
      const result = await rollUnderTraffic(cluster, 'acme');
      console.log(`[real-cluster] ${describeRoll(result)}`);
      for (const report of result.reports) expect(report, report.name).toMatchObject({ failed: 0 });
      const { expectedSha256, ...download } = result.download;
      expect(download, download.stderr).toMatchObject({ code: 0, sha256: expectedSha256 });
      expect(result.events.missing, 'uploads whose event never came').toEqual([]);
      expect(result.events.ids).toEqual([...new Set(result.events.ids)].sort((a, b) => a - b)); // in order, none twice
      expect(result.events.connections).toBeGreaterThan(1); // it did have to move
      expect(result.shell.reattached).toBeGreaterThan(0);
      const services = await pods('app.kubernetes.io/part-of=boxyard,app.kubernetes.io/component=server');
      expect(services.filter((p) => !p.metadata.deletionTimestamp).every((p) => p.spec.containers[0]!.image === `${image.image}-next`)).toBe(true);
      // The same shell (PID), and what it showed before the roll replayed on reattaching.
      const shell = result.shell.client;
      shell.type('echo "pid=$$" after-roll-\'\'marker\r');
      expect(/pid=(\d+) after-roll-marker/.exec(await shell.waitFor(/pid=\d+ after-roll-marker/, 30_000))![1]).toBe(result.shell.pidBefore);
      expect(plain(shell.output())).toContain('before-roll-marker');
      await shell.close();
      await result.shell.stop();
    }, 1_500_000);

    it('survives kill -9 of the leader with no duplicate children', async () => {
      const lease = async () => (await json<{ spec: { holderIdentity?: string } }>(['get', 'lease', '-n', SYSTEM_NS, 'boxyard'])).spec.holderIdentity;
      const leader = (await lease())!;
      const pod = await json<Pod>(['get', 'pod', '-n', SYSTEM_NS, leader]);
      const restarts = (p: Pod) => (p.status.containerStatuses?.[0] as { restartCount?: number } | undefined)?.restartCount ?? 0;
      const restartsBefore = restarts(pod);
      const containerId = pod.status.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
      const { stdout } = await run('ctr', ['--address', `${NODE.runDir}/containerd.sock`, '--namespace', 'k8s.io', 'tasks', 'ls']);
      const pid = Number(
        stdout
          .split('\n')
          .find((l) => l.startsWith(containerId))!
          .trim()
          .split(/\s+/)[1],
      );
      process.kill(pid, 'SIGKILL');
      // While no one leads, change a resource: the next leader must reconcile it.
      await kubectl(['patch', 'boxrepository', 'boxes', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":1}}']);
      // The other replica takes the lease, or the killed one's restarted container (same pod name) renews it.
      await until(
        'a live operator to lead',
        async () => {
          const holder = await lease();
          if (holder && holder !== leader) return holder;
          return restarts(await json<Pod>(['get', 'pod', '-n', SYSTEM_NS, leader])) > restartsBefore ? leader : undefined;
        },
        90_000,
      );
      await kubectl(['wait', '-n', NS, '--for=jsonpath={.status.readyReplicas}=1', 'deployment/boxes-box-repository', '--timeout=180s']);
      for (const kind of ['deployments', 'services', 'configmaps', 'ingresses']) {
        const items = (
          await json<{ items: { metadata: { name: string } }[] }>(['get', kind, '-n', NS, '-l', 'app.kubernetes.io/managed-by=boxyard-operator'])
        ).items.map((i) => i.metadata.name);
        expect(new Set(items).size, kind).toBe(items.length);
        expect(items.filter((n) => n.startsWith('boxes-')).length, `${kind} of boxes`).toBeLessThanOrEqual(1);
      }
      await until('one box-repository pod', async () =>
        (await pods('app.kubernetes.io/name=box-repository')).filter((p) => !p.metadata.deletionTimestamp).length === 1 ? true : undefined,
      );
    }, 300_000);

    it('backs up the FileShare and the BoxRepository with Backups (Jobs), bootstraps new ones after deletion, and wget and vagrant get the same bytes', async () => {
      await backupDeleteRestore(cluster);
    }, 900_000);

    it('keeps only its retention with a ScheduledBackup every minute', async () => {
      await scheduleKeepsRetention(cluster);
    }, 400_000);

    it('drops the schema and the stored objects when a resource with deletionPolicy Delete is deleted', async () => {
      const schemas = async () => (await sql('select schema_name from information_schema.schemata')).map((r) => r.schema_name);
      expect(await schemas()).toContain('file_share');
      await kubectl(['patch', 'fileshare', 'files', '-n', NS, '--type=merge', '-p', '{"spec":{"deletionPolicy":"Delete"}}']);
      await kubectl(['delete', 'fileshare', 'files', '-n', NS, '--timeout=120s']);
      expect(await schemas()).not.toContain('file_share');
      const left: string[] = [];
      for await (const item of s3.listObjectsV2('shared-files', 'team-a/', true)) left.push((item as { name: string }).name);
      expect(left).toEqual([]);
      await until('the file-share pods to go', async () => ((await pods('app.kubernetes.io/name=file-share')).length === 0 ? true : undefined));
    }, 300_000);

    it('stops with nothing left on the host: no node process, mount, iptables chain, cgroup or bridge', async () => {
      await cluster.plane.stop();
      // Zombies (state Z) are not running: reaping re-parented shims is the machine's init's job, not ours.
      const { stdout: processes } = await run('ps', ['-eo', 'stat=,args=']);
      const live = processes.split('\n').filter((p) => !p.trimStart().startsWith('Z'));
      expect(live.filter((p) => /containerd-shim|kubelet-v|kube-proxy-v|coredns-v|traefik-v|\scontainerd /.test(p))).toEqual([]);
      expect((await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.includes(dir) || l.includes(NODE.runDir))).toEqual([]);
      const { stdout: rules } = await run('iptables-save');
      expect(rules.split('\n').filter((l) => /KUBE-|CNI-|BOXYARD-/.test(l))).toEqual([]);
      expect(
        await run('ip', ['link', 'show', NODE.bridge]).then(
          () => 'present',
          () => 'gone',
        ),
      ).toBe('gone');
      const { stdout: cgroups } = await run('find', ['/sys/fs/cgroup', '-maxdepth', '2', '-name', 'kubepods']);
      expect(cgroups.trim()).toBe('');
    }, 120_000);
  },
);

// The guide's by-hand walkthrough (docs/kubernetes.md), run as a script once this suite's cluster is gone: one node
// fits on a machine, and the suites of one file run one after the other.
describeWalkthrough();
