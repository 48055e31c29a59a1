# The testbed's commands. See README.md.
CARGO ?= cargo
CONFIG ?= cluster.toml
BIN := target/release
MASTER := $(BIN)/master --config $(CONFIG)

# Demo data and jobs run by `make cluster`.
DEMO_BLOCKS ?= 16
DEMO_BLOCK_SIZE ?= 16MiB
DEMO_JOBS ?= 3

# The netns mode (root): namespaces are named $(NETNS_PREFIX)master, ...bridge, ...<worker>.
NETNS_PREFIX ?= mrt-
NETNS_MASTER := ip netns exec $(NETNS_PREFIX)master $(BIN)/master --config $(dir $(CONFIG))run/netns/cluster.toml

# The container mode: images FROM scratch with static binaries built here.
DOCKER_TARGET := x86_64-unknown-linux-gnu
DOCKER_BIN := target/$(DOCKER_TARGET)/release
DOCKER_PROJECT ?= mrtb
DOCKER_MASTER := $(BIN)/master --config $(dir $(CONFIG))run/docker/cluster.toml

# `make experiment EXP=<name>` runs experiments/<name>.toml.
EXP ?= smoke

.PHONY: build docker-bins cluster cluster-netns cluster-docker stop test bench clean experiment trace chaos campaign soak wheel

build:
	$(CARGO) build --release --bins

## The main job: a local cluster, demo data, input-sink jobs and a wordcount, their reports.
## The cluster stays up afterwards (`make stop` ends it).
cluster: build
	$(MASTER) up --fresh
	$(MASTER) load --name demo --generate text --blocks $(DEMO_BLOCKS) --block-size $(DEMO_BLOCK_SIZE)
	$(MASTER) submit --workload input-sink --input demo --count $(DEMO_JOBS) --wait
	$(MASTER) submit --workload wordcount --input demo --reduces 2 --output demo-counts --wait
	@echo "top ten words of demo (master cat demo-counts | sort -k2,2nr -k1,1 | head):"
	@$(MASTER) cat demo-counts | LC_ALL=C sort -k2,2nr -k1,1 | head -10

## The same in Linux network namespaces, links shaped by tc at nic_mbps (needs root).
## The CLI then runs inside the master's namespace: $(NETNS_MASTER) <command>.
cluster-netns: build
	$(MASTER) up --fresh --netns --netns-prefix $(NETNS_PREFIX)
	$(NETNS_MASTER) load --name demo --generate text --blocks $(DEMO_BLOCKS) --block-size $(DEMO_BLOCK_SIZE)
	$(NETNS_MASTER) submit --workload input-sink --input demo --count $(DEMO_JOBS) --wait
	$(NETNS_MASTER) submit --workload wordcount --input demo --reduces 2 --output demo-counts --wait

## Statically linked master and worker for the container images (nothing else is in them).
docker-bins:
	RUSTFLAGS='-C target-feature=+crt-static --cfg tokio_unstable' $(CARGO) build --release --bins --target $(DOCKER_TARGET)

## The same demo with every node in its own Docker container on a private network
## (images built here, nothing pulled); the CLI talks to the containers' addresses.
cluster-docker: build docker-bins
	$(MASTER) up --fresh --docker --docker-project $(DOCKER_PROJECT) --docker-bin $(DOCKER_BIN)
	$(DOCKER_MASTER) load --name demo --generate text --blocks $(DEMO_BLOCKS) --block-size $(DEMO_BLOCK_SIZE)
	$(DOCKER_MASTER) submit --workload input-sink --input demo --count $(DEMO_JOBS) --wait
	$(DOCKER_MASTER) submit --workload wordcount --input demo --reduces 2 --output demo-counts --wait
	@echo "top ten words of demo (master cat demo-counts | sort -k2,2nr -k1,1 | head):"
	@$(DOCKER_MASTER) cat demo-counts | LC_ALL=C sort -k2,2nr -k1,1 | head -10

## Stops the cluster of any mode (and removes its namespaces, or its containers, network and volumes).
stop:
	-$(MASTER) down

## Tests that cannot run here (no root, no chromium, no Docker engine, ...)
## say so in the last lines, with the package that would run them. It first
## installs what it needs (scripts/test-deps setup: the same list as CI's
## install as root; the Python tools with pip --user otherwise).
test:
	scripts/test-deps setup
	$(CARGO) fmt --all -- --check
	python3 scripts/check-figures --self-test
	python3 scripts/check-figures
	python3 scripts/check-prose --self-test
	python3 scripts/check-prose
	python3 scripts/bench-table --self-test
	python3 scripts/bench-table --check docs/benchmarks.md
	python3 scripts/bar-readings --self-test
	python3 scripts/compare-runs --self-test
	python3 scripts/trace-meta --self-test
	python3 scripts/tail-causes --self-test
	python3 scripts/heartbeat-order --self-test
	python3 scripts/order-draws --self-test
	python3 scripts/trace-bytes --self-test
	python3 scripts/reduce-bound --self-test
	python3 scripts/cluster-sequence --self-test
	python3 scripts/check-docs --self-test
	python3 scripts/check-docs
	python3 scripts/code-sizes --self-test
	python3 scripts/code-sizes
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) build --release --bins
	$(BIN)/master claims check --verify --quiet
	$(CARGO) build --bins
	$(MAKE) docker-bins
	rm -f target/tmp/skipped-tests.txt
	$(CARGO) test --workspace -- --test-threads=2
	scripts/test-deps python-package
	scripts/test-deps pytest
	@scripts/test-deps report

## Run an experiment spec; results in results/<name>/<timestamp>/. Specs named
## sim-* are simulator sweeps (`master sim sweep`), the others real clusters
## (DEPLOYMENT=netns or docker for namespaces or containers; default processes).
DEPLOYMENT ?= processes
experiment: build
	@case "$(EXP)" in \
	  sim-*) $(BIN)/master sim sweep experiments/$(EXP).toml ;; \
	  *) $(BIN)/master experiment experiments/$(EXP).toml --deployment $(DEPLOYMENT) ;; \
	esac

## One hour of Facebook's 2010 production workload (SWIM, traces/swim/) replayed
## on local clusters under five schedulers, 3 seeds each (about 30 minutes);
## results in results/swim-hour/<timestamp>/.
trace: build
	$(BIN)/master experiment experiments/swim-hour.toml --deployment $(DEPLOYMENT)

## The chaos run: jobs on a 5-worker local cluster under kills, stops and
## corrupted replicas; results in results/chaos/<timestamp>/.
CHAOS_SEED ?= 1
chaos: build
	$(BIN)/master chaos --seed $(CHAOS_SEED)

## The randomized fault campaign: CAMPAIGN_MINUTES of partitions, master restarts, kills,
## stops, full and slow disks and slow NICs drawn from CAMPAIGN_SEED while wordcount and sort
## run; then the checker reads the whole history. In network namespaces as root, else on
## local processes (no partitions); then 5 minutes of jobs without faults. CAMPAIGN_ARGS=--tls
## runs it over HTTPS. Results in results/campaign/<timestamp>/.
CAMPAIGN_MINUTES ?= 30
CAMPAIGN_SEED ?= 1
CAMPAIGN_ARGS ?=
campaign: build
	$(BIN)/master campaign --minutes $(CAMPAIGN_MINUTES) --seed $(CAMPAIGN_SEED) $(CAMPAIGN_ARGS)

## The soak run: the chaos job mix at a steady rate for SOAK_MINUTES, every
## process sampled each minute; fails if anything grows by more than 10%
## from the tenth minute to the end. Results in results/soak/<timestamp>/.
SOAK_MINUTES ?= 30
soak: build
	$(BIN)/master soak --minutes $(SOAK_MINUTES)

clean: stop
	rm -rf run

## The Python package as a wheel (maturin; the manylinux tag names the oldest glibc it runs
## on), in target/wheels/: `pip install target/wheels/mrtb-*.whl` needs no Rust toolchain.
wheel:
	scripts/test-deps wheel

## Every benchmark, side by side in one run; figures in results/bench/<timestamp>/
## (scripts/bench-table --write docs/benchmarks.md then puts them in the docs).
bench: build
	CARGO="$(CARGO)" scripts/bench
