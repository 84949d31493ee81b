#!/usr/bin/python3
"""Offline checks of the Kubernetes manifests in deploy/k8s.

    k8s_manifests_test.py <source dir>

1. yamllint (strict) over every manifest.
2. The manifests agree with each other: selectors match the pod labels; the
   StatefulSet names the headless Service; the cluster ConfigMap lists one
   <statefulset>-<i>.<service>:<port> per replica; the grpc port is the same
   in the ConfigMap, the container and the Service; the metrics port is the
   same in --metrics_port, the container and the Service; every probe asks
   gRPC health on the grpc port (ps_health_probe over TLS, with its CA in a
   mounted Secret and the pod's own name checked); the
   worker Job reads the same ConfigMap key as the shards and has
   completions = parallelism = --num_workers; every file a flag names lies in
   a mounted ConfigMap or Secret that holds that key; the Secrets mounted are
   exactly those secrets.example.yaml declares; every container requests CPU
   and memory; the startup probe allows a long restore.
3. The same checks must refuse broken copies (a replica too many, a port, a
   Secret's name, a label changed, a probe's port, an HTTP probe, the
   probe's CA not mounted), so the checker itself is tested.
4. deploy/Containerfile is FROM debian:12, runs as the pods' user and
   exposes the shard's ports.
5. `kubectl kustomize` renders kustomization.yaml, and the rendered objects
   pass the same checks (skipped, saying so, where kubectl is absent).

Exit 77 (skipped) when python3-yaml or yamllint is missing; every check that
could run has passed by then.
"""
import copy
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIPPED: python3-yaml is not installed (deploy/setup.sh installs it)")
    sys.exit(77)

# Startup probe: a restore of a large checkpoint may take this long.
MIN_STARTUP_S = 600
YAMLLINT_CONFIG = ("{extends: default, rules: {line-length: {max: 100}, "
                   "document-start: disable}}")


def load_all(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def by_kind(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    if len(found) != 1:
        raise AssertionError(f"expected one {kind}, found {len(found)}")
    return found[0]


def labels_match(selector, labels, what):
    """Every selector pair is among the labels."""
    missing = {k: v for k, v in selector.items() if labels.get(k) != v}
    return [f"{what}: selector {missing} does not match pod labels {labels}"] if missing else []


def flag_value(args, flag):
    match = re.search(r"--%s=(\"?)([^\s\"]+)\1" % re.escape(flag), args)
    return match.group(2) if match else None


def container_port(container, name):
    for port in container.get("ports", []):
        if port.get("name") == name:
            return port["containerPort"]
    return None


def service_port(service, name):
    for port in service["spec"]["ports"]:
        if port.get("name") == name:
            return port
    return None


def file_errors(pod_spec, container, args, configmaps, secrets, what):
    """Every absolute file a flag or command names under a mount exists there."""
    errors = []
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    mounts = container.get("volumeMounts", [])
    for path in set(re.findall(r"(/etc/taups/[\w./-]+)", args)):
        mount = next((m for m in mounts if path.startswith(m["mountPath"].rstrip("/") + "/")),
                     None)
        if mount is None:
            errors.append(f"{what}: {path} is in no volume mount")
            continue
        rel = path[len(mount["mountPath"].rstrip("/")) + 1:]
        volume = volumes.get(mount["name"])
        if volume is None:
            errors.append(f"{what}: mount {mount['name']} has no volume")
            continue
        if "configMap" in volume:
            source, data = volume["configMap"]["name"], configmaps
        elif "secret" in volume:
            source, data = volume["secret"]["secretName"], secrets
        else:
            errors.append(f"{what}: {path} is on volume {mount['name']}, not a ConfigMap or Secret")
            continue
        if source not in data:
            errors.append(f"{what}: {path} is in '{source}', which is not declared")
            continue
        items = volume.get("configMap", volume.get("secret")).get("items")
        key = rel
        if items is not None:
            key = next((i["key"] for i in items if i["path"] == rel), None)
        if key is None or key not in data[source]:
            errors.append(f"{what}: {path}: '{source}' has no key for '{rel}'")
    return errors


def probe_errors(name, probe, grpc_port, service_name, pod_spec, container, configmaps,
                 secrets):
    """A probe asks grpc.health.v1 on the shard's gRPC port: ps_health_probe
    over TLS (the shards' transport) as an exec probe, or Kubernetes' own
    plaintext grpc probe. Its CA lies in a mounted Secret, the name it checks
    is the pod's under the headless Service, and the kubelet waits for it
    longer than the probe's own call deadline."""
    if "grpc" in probe:
        if probe["grpc"].get("port") != grpc_port:
            return [f"{name} probes port {probe['grpc'].get('port')}, not {grpc_port}"]
        return []
    command = " ".join(probe.get("exec", {}).get("command", []))
    if "ps_health_probe" not in command:
        return [f"{name} does not run ps_health_probe (gRPC health): {sorted(probe)}"]
    errors = []
    server = flag_value(command, "server")
    if server != f"127.0.0.1:{grpc_port}":
        errors.append(f"{name}: --server={server}, not 127.0.0.1:{grpc_port}")
    if flag_value(command, "tls_ca") is None:
        errors.append(f"{name}: no --tls_ca (the shards speak TLS)")
    server_name = flag_value(command, "tls_server_name") or ""
    if not server_name.endswith(f".{service_name}") or "POD_NAME" not in server_name:
        errors.append(f"{name}: --tls_server_name={server_name} is not the pod's name "
                      f"under '{service_name}'")
    deadline = float(flag_value(command, "timeout_s") or 5)
    if probe.get("timeoutSeconds", 1) <= deadline:
        errors.append(f"{name}: timeoutSeconds {probe.get('timeoutSeconds', 1)} does not "
                      f"outlast --timeout_s={deadline:g}")
    errors += file_errors(pod_spec, container, command, configmaps, secrets, name)
    return errors


def check(docs, secret_docs):
    """Returns the list of inconsistencies; empty when the manifests agree."""
    errors = []
    sts = by_kind(docs, "StatefulSet")
    service = by_kind(docs, "Service")
    pdb = by_kind(docs, "PodDisruptionBudget")
    job = by_kind(docs, "Job")
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"}
    secrets = {}
    for d in secret_docs:
        if d.get("kind") == "Secret":
            secrets[d["metadata"]["name"]] = {**d.get("data", {}), **d.get("stringData", {})}

    pod = sts["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    errors += labels_match(sts["spec"]["selector"]["matchLabels"], pod_labels, "StatefulSet")
    errors += labels_match(service["spec"]["selector"], pod_labels, "Service")
    errors += labels_match(pdb["spec"]["selector"]["matchLabels"], pod_labels,
                           "PodDisruptionBudget")
    if pdb["spec"].get("maxUnavailable") != 1:
        errors.append("PodDisruptionBudget: maxUnavailable is not 1")
    anti = pod["spec"].get("affinity", {}).get("podAntiAffinity", {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", [])
    if not anti:
        errors.append("StatefulSet: no required pod anti-affinity")
    for term in anti:
        errors += labels_match(term["labelSelector"]["matchLabels"], pod_labels, "anti-affinity")
    if sts["spec"]["serviceName"] != service["metadata"]["name"]:
        errors.append(f"StatefulSet serviceName {sts['spec']['serviceName']} is not the "
                      f"Service {service['metadata']['name']}")
    if service["spec"].get("clusterIP") != "None":
        errors.append("Service is not headless (clusterIP: None)")

    server = pod["spec"]["containers"][0]
    server_args = " ".join(server.get("args", []))
    grpc_port = container_port(server, "grpc")
    metrics_port = container_port(server, "metrics")
    for name, port in (("grpc", grpc_port), ("metrics", metrics_port)):
        sp = service_port(service, name)
        if sp is None or port is None:
            errors.append(f"port '{name}' missing in the Service or the shard container")
        elif sp["port"] != port or sp.get("targetPort") not in (name, port):
            errors.append(f"Service port {name} {sp} does not reach container port {port}")
    if flag_value(server_args, "metrics_port") != str(metrics_port):
        errors.append(f"--metrics_port={flag_value(server_args, 'metrics_port')} is not the "
                      f"container's metrics port {metrics_port}")
    for probe_name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = server.get(probe_name)
        if probe is None:
            errors.append(f"shard container has no {probe_name}")
            continue
        errors += probe_errors(probe_name, probe, grpc_port, service["metadata"]["name"],
                               pod["spec"], server, configmaps, secrets)
    startup = server.get("startupProbe", {})
    if startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3) < MIN_STARTUP_S:
        errors.append(f"startupProbe allows less than {MIN_STARTUP_S} s for a restore")

    # The cluster file: one line per replica, in pod ordinal order.
    cluster_path = flag_value(server_args, "cluster_file")
    cluster_key = os.path.basename(cluster_path or "")
    cluster_cm = next((v["configMap"]["name"] for v in pod["spec"]["volumes"] if "configMap" in v),
                      None)
    text = configmaps.get(cluster_cm, {}).get(cluster_key)
    if text is None:
        errors.append(f"--cluster_file={cluster_path}: no key '{cluster_key}' in ConfigMap "
                      f"'{cluster_cm}'")
        text = ""
    shards = [line.strip() for line in text.splitlines()
              if line.strip() and not line.strip().startswith("#")]
    if len(shards) != sts["spec"]["replicas"]:
        errors.append(f"StatefulSet replicas {sts['spec']['replicas']} but the cluster file "
                      f"lists {len(shards)} shards")
    for i, line in enumerate(shards):
        want = f"{sts['metadata']['name']}-{i}.{service['metadata']['name']}:{grpc_port}"
        if line != want:
            errors.append(f"cluster file line {i + 1} is '{line}', not '{want}'")

    # The worker Job: same ConfigMap and key, one worker per completion index.
    worker_pod = job["spec"]["template"]
    worker = worker_pod["spec"]["containers"][0]
    worker_args = " ".join(worker.get("args", []))
    worker_cms = [v["configMap"]["name"] for v in worker_pod["spec"].get("volumes", [])
                  if "configMap" in v]
    if worker_cms != [cluster_cm]:
        errors.append(f"worker Job mounts ConfigMaps {worker_cms}, not ['{cluster_cm}']")
    if f"/{cluster_key}" not in worker_args:
        errors.append(f"worker Job does not read '{cluster_key}' for --servers")
    spec = job["spec"]
    num_workers = flag_value(worker_args, "num_workers")
    if not (spec.get("completionMode") == "Indexed" and
            str(spec.get("completions")) == str(spec.get("parallelism")) == num_workers):
        errors.append(f"worker Job: completions {spec.get('completions')}, parallelism "
                      f"{spec.get('parallelism')} and --num_workers={num_workers} differ "
                      "(or the Job is not Indexed)")
    if "JOB_COMPLETION_INDEX" not in (flag_value(worker_args, "worker_id") or ""):
        errors.append("worker Job: --worker_id is not the completion index")

    # Files named by flags, Secrets mounted against Secrets declared.
    errors += file_errors(pod["spec"], server, server_args, configmaps, secrets, "shard")
    errors += file_errors(worker_pod["spec"], worker, worker_args, configmaps, secrets, "worker")
    mounted = {v["secret"]["secretName"]
               for p in (pod, worker_pod) for v in p["spec"].get("volumes", []) if "secret" in v}
    if mounted != set(secrets):
        errors.append(f"Secrets mounted {sorted(mounted)} are not those declared "
                      f"{sorted(secrets)}")
    for flag in ("tls_cert", "tls_key", "auth_file"):
        if flag_value(server_args, flag) is None:
            errors.append(f"shard has no --{flag}")
    for flag in ("tls_ca", "auth_token_file"):
        if flag_value(worker_args, flag) is None:
            errors.append(f"worker has no --{flag}")
    for what, container in (("shard", server), ("worker", worker)):
        requests = container.get("resources", {}).get("requests", {})
        if "cpu" not in requests or "memory" not in requests:
            errors.append(f"{what} container requests no cpu or memory")
    return errors


def containerfile_errors(path, docs):
    """The image runs as the pods' user and exposes the shard's ports."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    errors = []
    pod = by_kind(docs, "StatefulSet")["spec"]["template"]["spec"]
    user = re.findall(r"^USER (\d+)", text, re.M)
    if user != [str(pod["securityContext"]["runAsUser"])]:
        errors.append(f"Containerfile USER {user} is not runAsUser "
                      f"{pod['securityContext']['runAsUser']}")
    exposed = sorted(int(p) for line in re.findall(r"^EXPOSE (.*)$", text, re.M)
                     for p in line.split())
    ports = sorted(p["containerPort"] for p in pod["containers"][0]["ports"])
    if exposed != ports:
        errors.append(f"Containerfile EXPOSE {exposed} is not the shard's ports {ports}")
    if not re.search(r"^FROM \S*debian:12$", text, re.M):
        errors.append("Containerfile's image is not FROM debian:12")
    return errors


def mutations():
    """Broken copies the checker must refuse: (what, function changing docs)."""
    def sts(docs):
        return by_kind(docs, "StatefulSet")

    def replicas(docs, _):
        sts(docs)["spec"]["replicas"] += 1

    def service_port_change(docs, _):
        service_port(by_kind(docs, "Service"), "grpc")["port"] += 1

    def secret_name(docs, _):
        for v in sts(docs)["spec"]["template"]["spec"]["volumes"]:
            if "secret" in v:
                v["secret"]["secretName"] += "-typo"
                return

    def pod_label(docs, _):
        labels = sts(docs)["spec"]["template"]["metadata"]["labels"]
        labels["app.kubernetes.io/component"] = "shard"

    def metrics_flag(docs, _):
        c = sts(docs)["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [a.replace("--metrics_port=", "--metrics_port=1") for a in c["args"]]

    def worker_count(docs, _):
        by_kind(docs, "Job")["spec"]["completions"] += 1

    def probe(docs):
        return sts(docs)["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]

    def probe_port(docs, _):
        cmd = probe(docs)["exec"]["command"]
        cmd[-1] = cmd[-1].replace("127.0.0.1:", "127.0.0.1:1")

    def probe_http(docs, _):
        p = probe(docs)
        del p["exec"]
        p["httpGet"] = {"path": "/readyz", "port": 9100}

    def probe_ca_item(docs, _):
        for v in sts(docs)["spec"]["template"]["spec"]["volumes"]:
            if "secret" in v and "items" in v["secret"]:
                v["secret"]["items"] = [i for i in v["secret"]["items"] if i["key"] != "ca.crt"]

    def secret_key(_, secret_docs):
        del secret_docs[0]["stringData"][next(iter(secret_docs[0]["stringData"]))]

    return [("replicas + 1", replicas), ("Service grpc port + 1", service_port_change),
            ("a Secret renamed", secret_name), ("a pod label changed", pod_label),
            ("--metrics_port changed", metrics_flag), ("Job completions + 1", worker_count),
            ("a Secret key removed", secret_key), ("probe --server port", probe_port),
            ("readiness over HTTP", probe_http), ("probe CA not mounted", probe_ca_item)]


def main():
    source = sys.argv[1]
    k8s = os.path.join(source, "deploy", "k8s")
    failures = []
    skipped = []

    files = sorted(os.path.join(k8s, f) for f in os.listdir(k8s) if f.endswith(".yaml"))
    yamllint = shutil.which("yamllint")
    if yamllint:
        lint = subprocess.run([yamllint, "-s", "-d", YAMLLINT_CONFIG, *files],
                              capture_output=True, text=True)
        if lint.returncode != 0:
            failures.append("yamllint:\n" + lint.stdout + lint.stderr)
        else:
            print(f"yamllint: {len(files)} files clean")
    else:
        skipped.append("yamllint not found (deploy/setup.sh installs it)")

    kustomization = load_all(os.path.join(k8s, "kustomization.yaml"))[0]
    resources = kustomization["resources"]
    listed = {os.path.join(k8s, r) for r in resources}
    unlisted = [os.path.basename(f) for f in files
                if f not in listed and os.path.basename(f) not in
                ("kustomization.yaml", "secrets.example.yaml")]
    if unlisted:
        failures.append(f"kustomization.yaml does not list {unlisted}")
    docs = [d for f in sorted(listed) for d in load_all(f)]
    secret_docs = load_all(os.path.join(k8s, "secrets.example.yaml"))

    errors = check(docs, secret_docs)
    failures += errors
    if not errors:
        print(f"consistency: {len(docs)} objects agree")

    for what, mutate in mutations():
        broken, broken_secrets = copy.deepcopy(docs), copy.deepcopy(secret_docs)
        mutate(broken, broken_secrets)
        found = check(broken, broken_secrets)
        if not found:
            failures.append(f"the checker accepted a broken copy ({what})")
        else:
            print(f"broken copy refused ({what}): {found[0]}")

    failures += containerfile_errors(os.path.join(source, "deploy", "Containerfile"), docs)

    kubectl = shutil.which("kubectl")
    if kubectl:
        rendered = subprocess.run([kubectl, "kustomize", k8s], capture_output=True, text=True)
        if rendered.returncode != 0:
            failures.append("kubectl kustomize failed:\n" + rendered.stderr)
        else:
            out = [d for d in yaml.safe_load_all(rendered.stdout) if d is not None]
            names = sorted((d["kind"], d["metadata"]["name"]) for d in out)
            want = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
            if names != want:
                failures.append(f"kustomize renders {names}, not {want}")
            unlabelled = [d["metadata"]["name"] for d in out
                          if d["metadata"].get("labels", {}).get("app.kubernetes.io/part-of")
                          != "taups"]
            if unlabelled:
                failures.append(f"kustomize did not label {unlabelled}")
            failures += [f"rendered: {e}" for e in check(out, secret_docs)]
            print(f"kubectl kustomize: {len(out)} objects rendered, consistent")
    else:
        print("NOTE: kubectl not found: `kubectl kustomize` not checked")

    if failures:
        for f in failures:
            print("FAILED:", f, file=sys.stderr)
        return 1
    if skipped:
        print("SKIPPED:", "; ".join(skipped))
        return 77
    print("k8s_manifests_test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
