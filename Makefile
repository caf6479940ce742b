# gpuslice — thin wrapper over meson. See README.md.
#   make deps       install missing Debian packages (apt-get)
#   make            build everything and stage it in dist/
#   make test       deps + build + all tests (+ the same under ASan+UBSan); closing line "N passed, N failed"
#   make test-slow  long-running accuracy tests (compute limiter matrix); CI runs it too
#   make demo       deps + build + the lab's story on a simulated GPU
#   make image      container image (deploy/container/Dockerfile) with podman, buildah or docker
#   make image-offline  the same root filesystem as an OCI image built from dist/ without any base
#                   image or engine (umoci), in $(BUILD)/image; CI's path
#   make bench      benchmarks with ratios against in-run baselines
#   make install-manifests  dist/gpuslice-dra.yaml and dist/gpuslice-legacy.yaml (kubectl kustomize
#                   of deploy/dra and deploy/legacy) for kubectl apply -f
#   make lint       clang-format check + clang-tidy
#   make fuzz       libFuzzer build (clang) in build-fuzz/
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
DIST       ?= dist
JOBS       ?= $(shell nproc)
PYTHON     ?= /usr/bin/python3
MESON_OPTS ?=

.PHONY: all deps build stage test test-slow demo bench lint fuzz clean asan image image-offline install-manifests

all: stage

deps:
	@tools/install-deps.sh

$(BUILD)/build.ninja:
	@command -v meson >/dev/null || { echo "meson is not installed: run 'make deps' (or make test / make demo, which do)" >&2; exit 1; }
	meson setup $(BUILD) $(MESON_OPTS)

$(ASAN_BUILD)/build.ninja:
	meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

stage: build
	@rm -rf $(DIST).tmp
	@mkdir -p $(DIST).tmp/bin $(DIST).tmp/lib/gpusim && DESTDIR=$(CURDIR)/$(DIST).tmp meson install -C $(BUILD) --no-rebuild --quiet
	@# make install-manifests' renders are not build outputs: they survive a re-stage
	@for f in $(DIST)/gpuslice-*.yaml; do if [ -f "$$f" ]; then cp -p "$$f" $(DIST).tmp/; fi; done
	@rm -rf $(DIST) && mv $(DIST).tmp $(DIST)
	@echo "staged into $(DIST)/"

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD) -j $(JOBS)

test: deps
	@$(MAKE) --no-print-directory stage asan
	@$(PYTHON) tools/run-tests.py --build $(BUILD) --build $(ASAN_BUILD) --no-suite slow --no-suite bench

test-slow: deps
	@$(MAKE) --no-print-directory stage
	@$(PYTHON) tools/run-tests.py --build $(BUILD) --suite slow

demo: deps
	@$(MAKE) --no-print-directory stage
	@tools/demo.sh

image:
	@$(PYTHON) tools/image.py build

image-offline: stage
	@$(PYTHON) tools/image.py oci --dist $(DIST) --layout $(BUILD)/image

install-manifests:
	@command -v kubectl >/dev/null || { echo "install-manifests: kubectl (kustomize v5) is not installed" >&2; exit 1; }
	@mkdir -p $(DIST)
	kubectl kustomize deploy/dra > $(DIST)/gpuslice-dra.yaml.tmp && mv $(DIST)/gpuslice-dra.yaml.tmp $(DIST)/gpuslice-dra.yaml
	kubectl kustomize deploy/legacy > $(DIST)/gpuslice-legacy.yaml.tmp && mv $(DIST)/gpuslice-legacy.yaml.tmp $(DIST)/gpuslice-legacy.yaml
	@echo "install-manifests: $(DIST)/gpuslice-dra.yaml, $(DIST)/gpuslice-legacy.yaml (kubectl apply -f ...)"

bench: stage
	@tools/bench.sh

# clang-format and clang-tidy come from tools/deps.txt (make deps), as in CI.
lint: deps
	@$(MAKE) --no-print-directory $(BUILD)/build.ninja
	@tools/lint.sh $(BUILD)

fuzz:
	@test -f $(FUZZ_BUILD)/build.ninja || CC=clang meson setup $(FUZZ_BUILD) -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C $(FUZZ_BUILD) -j $(JOBS)
	@echo "libFuzzer targets in $(FUZZ_BUILD)/tests/fuzz/"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(DIST) $(DIST).tmp
