# aiops.triton — every entry point a person or CI uses. Run as root on Debian 12 / Ubuntu.
#   make lab    set up this machine, bring up the lab (2 systemd hosts + S3 + wheelhouse), run site.yml
#   make test   set up this machine and run every test stage (unit, lint, sanity, artifact, integration,
#               molecule, the execution environment against the lab, lab smoke)
SHELL := /bin/bash
.ONESHELL:
.SHELLFLAGS := -euo pipefail -c
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(ROOT)/.collection
# ansible-rulebook (requirements/eda.txt) runs its rules engine in Debian's Java 17
export JAVA_HOME ?= /usr/lib/jvm/java-17-openjdk-amd64
HOSTS ?= 2
APT_PACKAGES := podman runc debootstrap uidmap slirp4netns iproute2 git make python3-venv shellcheck \
                prometheus prometheus-node-exporter prometheus-alertmanager haproxy socat chromium fonts-dejavu-core \
                openjdk-17-jre-headless
STAGE := $(ROOT)/tools/stage.sh
# where tools/artifact_check.sh installs the built artifact (outside the checkout)
ARTIFACT_COLLECTIONS := $(or $(TMPDIR),/tmp)/aiops-artifact-check/collections

.PHONY: help setup system-packages venv collection-link lab lab-image lab-up lab-services lab-down lab-triton-image \
        wheelhouse models publish-models site eda eda-down test unit lint sanity artifact test-installed test-fleet integration molecule ee test-ee test-ee-lab de test-de bench bench-fleet bench-ab bench-mitogen clean

help:
	@sed -n '2,4p' Makefile

## --- set-up ---------------------------------------------------------------------------------------
setup: system-packages venv collection-link

system-packages:
	if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then
	  apt-get update -qq
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PACKAGES)
	  # The packages enable system services on :9090/:9093/:9100 (and haproxy); the monitoring and load-balancer
	  # tests start their own on loopback ports, so these must not sit on the machine.
	  if [ -d /run/systemd/system ]; then systemctl disable --now prometheus.service prometheus-node-exporter.service prometheus-alertmanager.service haproxy.service; fi
	fi

# The venv is rebuilt only when a requirements file changes.
venv: $(VENV)/.installed
$(VENV)/.installed: requirements/controller.txt requirements/models-build.txt roles/triton_server/files/requirements-native.txt roles/triton_server/files/requirements-python-models.txt requirements/monitoring.txt requirements/release.txt requirements/eda.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check $(foreach f,$^,-r $(f))
	python3 -m venv $(ROOT)/.venv-sanity
	$(ROOT)/.venv-sanity/bin/pip install -q --disable-pip-version-check "$$(grep '^ansible-core==' requirements/controller.txt)"
	touch $@

# Playbooks and tests address the checkout as the collection aiops.triton.
collection-link:
	mkdir -p .collection/ansible_collections/aiops
	ln -sfn $(ROOT) .collection/ansible_collections/aiops/triton

## --- the lab --------------------------------------------------------------------------------------
lab-image: setup
	$(PY) lab/labctl.py image

lab-services: lab-image wheelhouse
	$(PY) lab/labctl.py services

lab-up: lab-image wheelhouse
	$(PY) lab/labctl.py up --hosts $(HOSTS)

lab-down:
	$(PY) lab/labctl.py down

# The container method's Triton image (built offline from the wheelhouse, cached by its inputs) and the
# podman-capable host image; the archive is published on the wheelhouse server (molecule/container).
lab-triton-image: lab-image wheelhouse
	$(PY) lab/labctl.py triton-image

# Hosts install Python packages from here (pip --find-links), never each from PyPI.
wheelhouse: setup
	mkdir -p build/wheelhouse
	$(VENV)/bin/pip download -q --disable-pip-version-check -d build/wheelhouse \
	  -r roles/triton_server/files/requirements-native.txt -r roles/triton_server/files/requirements-tools.txt

# Rebuilt only when model sources change (the classifier's skops bytes differ per build, and a
# changed published version is refused).
models: build/.models-built
build/.models-built: $(shell find model_repository -type f -not -path '*/__pycache__/*') | setup
	$(PY) -m model_repository._build --out build
	touch $@

publish-models: models
	eval "$$($(PY) lab/labctl.py env)"
	$(PY) model_repository/publish.py --repository build/model_repository \
	  --endpoint-url "$$AIOPS_LAB_S3_ENDPOINT" --bucket aiops-models --prefix models >/dev/null

site:
	eval "$$($(PY) lab/labctl.py env)"
	mkdir -p build
	ansible-playbook -i inventories/lab site.yml 2>&1 | tee build/lab-site.log

# The main job: everything from a bare machine to verified Triton hosts in the lab, then the demo:
# the deployed models answer like an ops agent (gRPC) and the read-only fleet report is written.
# Running it again is safe: nothing is reinstalled, site.yml reports changed=0.
lab: lab-up publish-models site
	eval "$$($(PY) lab/labctl.py env)"
	$(PY) tools/ops_client.py --lab
	ansible-playbook -i inventories/lab playbooks/verify.yml
	# The lab's Prometheus (Debian's package on lab-1; inventories/lab-monitoring layers the group on).
	ansible-playbook -i inventories/lab -i inventories/lab-monitoring playbooks/monitoring.yml
	echo "Lab Prometheus: http://$$(podman inspect -f '{{(index .NetworkSettings.Networks "aiops-lab").IPAddress}}' lab-1):9090," \
	  "Alertmanager: :9093 (make eda starts the rulebook it sends to)"

# Alerts that act by themselves in the lab: the collection's rulebook (ansible-rulebook, Java 17) on this machine,
# where lab-1's Alertmanager (make lab) sends TritonGPUUnhealthy, TritonDown, TritonNotReady and the drift alerts.
# EDA_DRY_RUN=1: the gate records what it would run and runs nothing. Records: lab/.state/eda/results.jsonl;
# make lab-down stops it.
eda:
	eval "$$($(PY) lab/labctl.py env)"; $(PY) lab/labctl.py eda $(if $(filter 1 true yes,$(EDA_DRY_RUN)),--dry-run)

eda-down:
	$(PY) lab/labctl.py eda --stop

## --- tests ----------------------------------------------------------------------------------------
test: setup lab-services publish-models
	$(STAGE) --pytest unit          pytest -q -p no:cacheprovider -n 2 -m "not integration" tests
	$(STAGE) model-cards   $(PY) tools/check_model_cards.py
	# lint and sanity each keep about one core busy: side by side (84 s here, 159 s one after the other); either
	# failing fails the run once both have printed their line
	$(STAGE) lint          $(MAKE) --no-print-directory lint & lint=$$!
	sanity=0; $(STAGE) sanity tools/sanity.sh || sanity=$$?
	wait $$lint
	[ $$sanity -eq 0 ]
	$(STAGE) artifact      tools/artifact_check.sh
	# the EE (make ee) as AWX runs it; molecule/lb then runs its no-change site.yml from inside it over SSH
	$(STAGE) ee            $(MAKE) --no-print-directory test-ee
	# both cores, one test module per worker (module fixtures: one Triton, one S3 each): 16 -> 11 minutes here
	$(STAGE) --pytest integration   env AIOPS_MODEL_BUILD=$(ROOT)/build pytest -q -p no:cacheprovider -n 2 --dist loadfile -m integration tests
	# molecule/lb converges and runs every operation through the collection the artifact stage installed, its
	# no-change site.yml from inside the EE over SSH
	$(STAGE) --pytest molecule      env AIOPS_LB_COLLECTIONS_PATH=$(ARTIFACT_COLLECTIONS) AIOPS_LB_EE_IMAGE=$(EE_IMAGE) \
	  $(MAKE) --no-print-directory molecule
	$(STAGE) lab-smoke     tools/lab_smoke.sh
	echo "ALL STAGES PASSED"

unit:
	pytest -q -m "not integration" tests

lint:
	yamllint -s .
	ansible-lint --profile production --offline
	antsibull-changelog lint
	antsibull-docs lint-collection-docs --plugin-docs .

sanity:
	tools/sanity.sh

# The built artifact: galaxy-importer, installed into a clean path, every playbook by FQCN (a stage of `test`).
artifact:
	tools/artifact_check.sh

# The same, then the lab's site.yml twice through the installed collection from outside the checkout:
# the second run must report changed=0 (heavy: needs the lab hosts, `make lab-up publish-models`).
test-installed: lab-up publish-models
	tools/artifact_check.sh --lab

integration: models
	AIOPS_MODEL_BUILD=$(ROOT)/build pytest -q -m integration tests

# Every scenario under molecule/ but those in MOLECULE_SEPARATE, each create → converge → (idempotence) →
# side effect → verify → destroy. molecule/lb (4 hosts behind HAProxy, every operation under load through
# it) covers what molecule/fleet does on 3 hosts without a balancer (rollouts, a broken version stopped at the
# canary, the server role's own tests) but the per-group model drop and drift in check mode, which
# tests/integration prove on real Triton; fleet runs apart (`make test-fleet`) to keep CI inside its time.
MOLECULE_SEPARATE := fleet
# the scenarios whose converge is a first site.yml on fresh hosts: it must print no red (tools/converge_no_red.sh)
MOLECULE_NO_RED := container lb
molecule: lab-triton-image
	eval "$$($(PY) lab/labctl.py env)"
	# every scenario (a dir with molecule.yml); the first failure fails the stage (.SHELLFLAGS -e)
	mkdir -p build/logs
	for s in $$(ls molecule/*/molecule.yml | cut -d/ -f2 | grep -vxF -e '$(MOLECULE_SEPARATE)'); do
	  echo "== molecule $$s"
	  molecule test -s $$s 2>&1 | tee build/logs/molecule-$$s.log
	done
	# a fresh converge prints no red (issue 38 item 4)
	for s in $(MOLECULE_NO_RED); do tools/converge_no_red.sh build/logs/molecule-$$s.log $$s; done

test-fleet: setup lab-services publish-models lab-triton-image
	eval "$$($(PY) lab/labctl.py env)"
	molecule test -s fleet

## --- execution environment ---------------------------------------------------------------------
# The collection's EE (execution-environment.yml, ansible-builder v3) on the lab's Debian base image, with
# no registry: ansible-builder writes the build context, podman builds it (--pull=never) with this machine's
# CA bundle mounted for pip. The collection goes in from its built artifact; community.general (its
# haproxy module) from the pinned `ansible` package in .venv, as no Galaxy server is reachable.
EE_VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
EE_IMAGE ?= localhost/aiops-triton-ee:$(EE_VERSION)
ee: lab-image
	rm -rf build/ee
	mkdir -p build/ee/collections/community
	ansible-galaxy collection build --output-path build/ee . >/dev/null
	cp build/ee/aiops-triton-$(EE_VERSION).tar.gz build/ee/collections/aiops-triton.tar.gz
	cp -r $$($(PY) -c 'import ansible_collections.community.general as c; print(list(c.__path__)[0])') \
	  build/ee/collections/community/general
	ansible-builder create -f execution-environment.yml -c build/ee/context --output-filename Containerfile >/dev/null
	podman build --pull=never -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
	  -f build/ee/context/Containerfile -t $(EE_IMAGE) build/ee/context
	podman image ls $(EE_IMAGE)

# The decision environment: ansible-rulebook and Java on the EE (decision-environment.yml). `make test-de` runs the
# collection's rulebook in it against the converged lab (`make lab` first; tools/de_check.sh). Not stages of `make test`.
DE_IMAGE ?= localhost/aiops-triton-de:$(EE_VERSION)
de: ee
	rm -rf build/de
	ansible-builder create -f decision-environment.yml -c build/de/context --output-filename Containerfile >/dev/null
	podman build --pull=never --build-arg EE_BASE_IMAGE=$(EE_IMAGE) \
	  -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
	  -f build/de/context/Containerfile -t $(DE_IMAGE) build/de/context
	podman image ls $(DE_IMAGE)

test-de: de
	DE_IMAGE=$(DE_IMAGE) tools/de_check.sh --lab

# The EE as AWX / ansible-navigator run it (tools/ee_check.sh; the ee stage of `make test`).
test-ee: ee
	EE_IMAGE=$(EE_IMAGE) tools/ee_check.sh

# The same, then the lab's no-change site.yml from inside the EE over SSH (tools/ee_check.sh --lab): the lab
# converged first through the checkout (lab-up publish-models site: a no-op when `make lab` ran), every host's
# recap from the EE must say changed=0. Not a stage of `make test`: there molecule/lb runs the same
# tools/ee_site.sh on its fleet, and the no-red check reads molecule's first converges.
test-ee-lab: ee lab-up publish-models site
	# the lab's converge (a first one on a fresh machine) printed no red: every failure it expects it handles quietly
	if grep -nE '^(fatal|failed):|^\[ERROR\]' build/lab-site.log; then echo "the lab's site.yml printed the errors above" >&2; exit 1; fi
	EE_IMAGE=$(EE_IMAGE) tools/ee_check.sh --lab

## --- benchmarks ---------------------------------------------------------------------------------
# Triton as this collection deploys it vs a FastAPI + uvicorn baseline, and the serving-settings
# sweep behind model_repository/*/model.yml; writes docs/benchmarks.md sections and docs/img/*.png.
# About 25 minutes on 2 cores; quick iterations: BENCH_DURATION=1 BENCH_ROUNDS=1 BENCH_CONCURRENCY=1,32
# (see tests/benchmarks/bench_serving*.py for all settings). Not part of `make test`.
bench: models
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements/bench.txt
	$(PY) tests/benchmarks/bench_serving_sweep.py
	$(PY) tests/benchmarks/bench_serving.py

# The fleet at 8, 16 and 24 lab hosts (tests/benchmarks/bench_fleet.py): no-change site.yml through the lab
# transport and over SSH (the controller's CPU-seconds and peak memory), a model rollout under light load at
# each size. Brings the lab to 24 hosts (~16 GiB free memory; a first converge ~24 minutes), about 40 minutes
# more on 2 cores. Not part of `make test`; run it alone.
bench-fleet: setup models
	$(PY) tests/benchmarks/bench_fleet.py

# A change against a git ref (BASELINE=<ref>): no-change site.yml of both collections, side by side, on the
# lab hosts already converged (make lab HOSTS=24 first; tests/benchmarks/bench_ab.py). Run it alone.
BASELINE ?= HEAD~1
AB_HOSTS ?= 8,24
bench-ab: setup
	$(PY) tests/benchmarks/bench_ab.py --baseline $(BASELINE) --hosts $(AB_HOSTS)

# Ansible's SSH against Mitogen's persistent interpreter (mitogen_linear), no-change site.yml side by side on the
# lab hosts already converged (make lab HOSTS=8 first; tests/benchmarks/bench_mitogen.py). Run it alone.
MITOGEN_HOSTS ?= 8
bench-mitogen: setup
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements/mitogen.txt
	$(PY) tests/benchmarks/bench_mitogen.py --hosts $(MITOGEN_HOSTS)

clean: lab-down
	rm -rf build .collection
