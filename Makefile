# The testbed's commands. See README.md.
CARGO ?= cargo
CONFIG ?= cluster.toml
BIN := target/release
MASTER := $(BIN)/master --config $(CONFIG)

# Demo data and jobs run by `make cluster`.
DEMO_BLOCKS ?= 16
DEMO_BLOCK_SIZE ?= 16MiB
DEMO_JOBS ?= 3

.PHONY: build cluster stop test bench clean

build:
	$(CARGO) build --release --bins

## The main job: a local cluster, demo data, input-sink jobs, their reports.
## The cluster stays up afterwards (`make stop` ends it).
cluster: build
	$(MASTER) up --fresh
	$(MASTER) load --name demo --generate text --blocks $(DEMO_BLOCKS) --block-size $(DEMO_BLOCK_SIZE)
	$(MASTER) submit --workload input-sink --input demo --count $(DEMO_JOBS) --wait

stop:
	-$(MASTER) down

test:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	$(CARGO) build --release --bins
	$(CARGO) test --workspace -- --test-threads=2

clean: stop
	rm -rf run

bench: build
	$(CARGO) bench -p master --bench cluster
