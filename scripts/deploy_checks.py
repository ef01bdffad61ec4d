#!/usr/bin/env python3
"""Semantic checks of StreamRelay's deployment files, run by scripts/validate-deploy.sh.

The schema validators (nginx -t, docker-compose config, kubernetes-validate) say a file is
well formed; these checks say it does what the relay needs (SSE-safe proxying, drain timing,
non-root, ...). Each subcommand prints one line per check and exits 1 if any failed.

  deploy_checks.py nginx-static CONF
  deploy_checks.py nginx-smoke NGINX_BIN RENDER_SCRIPT      real nginx in front of stub relays
  deploy_checks.py compose RESOLVED_YAML RAW_COMPOSE NGINX_CONF ENV_EXAMPLE
  deploy_checks.py k8s DIR
  deploy_checks.py dockerfile DOCKERFILE                   (needs dockerfile-parse)
  deploy_checks.py runtime-packages DOCKERFILE             prints the RUNTIME_PACKAGES ARG
"""
import os
import re
import shlex
import subprocess
import sys

from deploy_check_report import FAILED, check, duration_seconds, finish
from deploy_nginx_smoke import cmd_nginx_smoke


# --------------------------------------------------------------------------------------- nginx
def nginx_directives(text):
    """(context path, name, args) for each simple directive; comments stripped."""
    out, stack, cur = [], [], ""
    i, n = 0, len(text)
    tokens, tok, quote = [], "", None
    while i < n:
        c = text[i]
        if quote:
            if c == "\\" and i + 1 < n:
                tok += text[i + 1]
                i += 2
                continue
            if c == quote:
                quote = None
                tokens.append(tok)
                tok = ""
            else:
                tok += c
        elif c in "\"'":
            quote = c
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif c.isspace():
            if tok:
                tokens.append(tok)
                tok = ""
        elif c in ";{}":
            if tok:
                tokens.append(tok)
                tok = ""
            if c == ";":
                if tokens:
                    out.append(("/".join(stack), tokens[0], tokens[1:]))
            elif c == "{":
                stack.append(" ".join(tokens))
            else:
                stack.pop()
            tokens = []
        else:
            tok += c
        i += 1
    return out


def cmd_nginx_static(conf):
    text = open(conf).read()
    ds = nginx_directives(text)

    def find(name):
        return [(ctx, args) for ctx, d, args in ds if d == name]

    for m in ("BEGIN RELAY_UPSTREAMS", "END RELAY_UPSTREAMS", "BEGIN RELAY_LISTEN", "END RELAY_LISTEN"):
        check(len(re.findall(rf"^\s*# {m}$", text, re.M)) == 1, f"nginx: marker '# {m}' present once")
    check(any(a == ["off"] for _, a in find("proxy_buffering")) and not any(a != ["off"] for _, a in find("proxy_buffering")),
          "nginx: proxy_buffering off (everywhere it is set)")
    check(find("proxy_http_version") and all(a == ["1.1"] for _, a in find("proxy_http_version")), "nginx: proxy_http_version 1.1")
    check(any([x.lower() for x in a] == ["connection", ""] for _, a in find("proxy_set_header")), 'nginx: proxy_set_header Connection ""')
    gz = find("gzip")
    check(gz and all(a == ["off"] for _, a in gz), "nginx: gzip off", str(gz))
    rts = find("proxy_read_timeout")
    check(rts and all(duration_seconds(a[0]) >= 60 for _, a in rts), "nginx: every proxy_read_timeout >= 60s (heartbeat 15s)", str(rts))
    nu = find("proxy_next_upstream")
    nu_args = [x for _, a in nu for x in a]
    check(nu and "error" in nu_args and "timeout" in nu_args, "nginx: proxy_next_upstream error timeout", str(nu))
    check("non_idempotent" not in nu_args, "nginx: POST never replayed after it was sent (no non_idempotent)")
    tries = find("proxy_next_upstream_tries")
    check(tries and int(tries[0][1][0]) >= 2, "nginx: proxy_next_upstream_tries >= 2", str(tries))
    for bad in ("ip_hash", "hash", "sticky", "sticky_cookie_insert"):
        check(not find(bad), f"nginx: no sticky balancing ({bad})")
    headers = {a[0].lower(): a[1] if len(a) > 1 else "" for _, a in find("proxy_set_header")}
    for h, var in (("last-event-id", "$http_last_event_id"), ("authorization", "$http_authorization"),
                   ("x-request-id", "$http_x_request_id")):
        check(headers.get(h) == var, f"nginx: passes {h} ({var})", str(headers.get(h)))
    passes = find("proxy_pass")
    check(passes and all(a == ["http://relay_backend"] for _, a in passes), "nginx: every proxy_pass goes to upstream relay_backend")
    ups = [ctx for ctx, d, _ in ds if d == "server" and ctx.endswith("upstream relay_backend")]
    check(len(ups) >= 1, "nginx: upstream relay_backend has servers")
    check(not find("pid") and not find("client_body_temp_path"), "nginx: no pid/temp paths hard-coded (runs under -p PREFIX)")
    finish()


# ------------------------------------------------------------------------------------- compose
def cmd_compose(resolved, raw, nginx_conf, env_example):
    import yaml
    cfg = yaml.safe_load(open(resolved))
    raw_text = open(raw).read()
    # Services behind a profile (the optional `cluster` profile) are not part of the default
    # stack that these checks describe; the raw file says which they are.
    raw_services = (yaml.safe_load(raw_text) or {}).get("services", {})
    profiled = {n for n, s in raw_services.items() if isinstance(s, dict) and s.get("profiles")}
    services = {n: s for n, s in cfg.get("services", {}).items() if n not in profiled}

    def is_relay(s):
        b = s.get("build")
        return (isinstance(b, dict) and str(b.get("dockerfile", "")).endswith("deploy/Dockerfile")) or \
            str(s.get("image", "")).startswith("stream-relay")

    relays = {n: s for n, s in services.items() if is_relay(s)}
    replicas = sum(int((s.get("deploy") or {}).get("replicas", 1)) for s in relays.values())
    check(replicas >= 3, "compose: three relay instances", f"{replicas}")
    redis = [s for s in services.values() if str(s.get("image", "")).startswith("redis:7")]
    check(len(redis) == 1, "compose: one Redis 7 service")
    redis_name = next((n for n, s in services.items() if str(s.get("image", "")).startswith("redis:7")), "redis")
    check(bool(redis and redis[0].get("healthcheck", {}).get("test")), "compose: Redis has a healthcheck")
    cmd = [str(c) for c in (redis[0].get("command") or [])] if redis else []
    check(any(cmd[i:i + 2] == ["--appendonly", "yes"] for i in range(len(cmd))) and bool(redis[0].get("volumes")),
          "compose: Redis persists (AOF on a volume: revocations and budgets live only in Redis)")
    for n, s in relays.items():
        env = s.get("environment", {})
        if isinstance(env, list):
            env = dict(e.split("=", 1) for e in env)
        dep = s.get("depends_on", {})
        check(isinstance(dep, dict) and dep.get(redis_name, {}).get("condition") == "service_healthy",
              f"compose: {n} waits for a healthy Redis")
        check(env.get("REDIS_URL", "").startswith(f"redis://{redis_name}:"), f"compose: {n} REDIS_URL points at the Redis service")
        check(env.get("RELAY_LISTEN") == "0.0.0.0:8080", f"compose: {n} RELAY_LISTEN=0.0.0.0:8080")
        check(bool(s.get("healthcheck", {}).get("test")), f"compose: {n} has a healthcheck (nginx waits on it)")
        try:
            grace = duration_seconds(s.get("stop_grace_period", "10s"))
            drain = duration_seconds(env.get("RELAY_DRAIN_TIMEOUT", "30s"))
        except ValueError as e:
            grace, drain = 0, 1
            print("   ", e)
        check(grace > drain, f"compose: {n} stop_grace_period ({grace:g}s) > RELAY_DRAIN_TIMEOUT ({drain:g}s)")
    for key in ("RELAY_JWT_SECRET", "RELAY_ADMIN_KEY"):
        check(re.search(r"\$\{" + key + r"(:?[?-][^}]*)?\}", raw_text) is not None and
              re.search(r"\$\{" + key + r"[:]?\?", raw_text) is not None,
              f"compose: {key} comes from .env and is required (${{{key}:?...}})")
        check(re.search(rf"^{key}=", open(env_example).read(), re.M) is not None, f".env.example: defines {key}")
    lbs = {n: s for n, s in services.items() if str(s.get("image", "")).startswith("nginx")}
    check(len(lbs) == 1, "compose: one nginx service")
    for n, s in lbs.items():
        vols = [v if isinstance(v, str) else f"{v.get('source')}:{v.get('target')}" for v in s.get("volumes", [])]
        check(any("deploy/nginx.conf:" in v for v in vols), f"compose: {n} uses deploy/nginx.conf", str(vols))
        ports = [str(p) if not isinstance(p, dict) else f"{p.get('host_ip', '')}:{p.get('published')}:{p.get('target')}" for p in s.get("ports", [])]
        check(any(re.search(r"(^|:)8080:\d+", p) for p in ports), f"compose: {n} published on localhost:8080", str(ports))
        dep = s.get("depends_on", {})
        check(all(dep.get(r, {}).get("condition") == "service_healthy" for r in relays),
              f"compose: {n} waits for healthy relays")
    text = open(nginx_conf).read()
    block = re.search(r"# BEGIN RELAY_UPSTREAMS\n(.*?)# END RELAY_UPSTREAMS", text, re.S).group(1)
    hosts = set(re.findall(r"^\s*server\s+([^:\s]+):8080", block, re.M))
    check(hosts == set(relays), "compose: nginx.conf upstreams are exactly the relay services", f"{hosts} vs {set(relays)}")
    finish()


# ----------------------------------------------------------------------------------------- k8s
def cmd_k8s(d):
    import yaml
    docs = []
    for fn in sorted(os.listdir(d)):
        if fn.endswith((".yaml", ".yml")):
            docs += [x for x in yaml.safe_load_all(open(os.path.join(d, fn))) if x]
    by = {}
    for x in docs:
        by.setdefault(x["kind"], []).append(x)
    for kind, api in (("Deployment", "apps/v1"), ("Service", "v1"), ("HorizontalPodAutoscaler", "autoscaling/v2"),
                      ("PodDisruptionBudget", "policy/v1"), ("ConfigMap", "v1"), ("Secret", "v1")):
        check(len(by.get(kind, [])) == 1 and by[kind][0]["apiVersion"] == api, f"k8s: one {kind} ({api})")
    if FAILED:
        finish()
    dep, svc, hpa, pdb = by["Deployment"][0], by["Service"][0], by["HorizontalPodAutoscaler"][0], by["PodDisruptionBudget"][0]
    cm, sec = by["ConfigMap"][0], by["Secret"][0]
    pod = dep["spec"]["template"]
    labels = pod["metadata"]["labels"]
    spec = pod["spec"]
    c = spec["containers"][0]
    check(dep["spec"]["selector"]["matchLabels"].items() <= labels.items(), "k8s: Deployment selector matches its pods")
    rp, lp = c.get("readinessProbe", {}), c.get("livenessProbe", {})
    check(rp.get("httpGet", {}).get("path") == "/readyz", "k8s: readinessProbe GET /readyz")
    check(lp.get("httpGet", {}).get("path") == "/healthz", "k8s: livenessProbe GET /healthz")
    pre = c.get("lifecycle", {}).get("preStop", {})
    cmd = pre.get("exec", {}).get("command", [])
    pre_s = 0.0
    if pre.get("sleep"):
        pre_s = float(pre["sleep"]["seconds"])
    elif cmd and os.path.basename(cmd[0]) == "sleep":
        pre_s = duration_seconds(cmd[1])
    check(pre_s > 0, "k8s: preStop sleep before SIGTERM", str(pre))
    cmdata, secdata = cm.get("data", {}), {**sec.get("stringData", {}), **sec.get("data", {})}
    drain = duration_seconds(cmdata.get("RELAY_DRAIN_TIMEOUT", "30s"))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    check(grace >= pre_s + drain + 5, f"k8s: terminationGracePeriodSeconds {grace} >= preStop {pre_s:g} + drain {drain:g} + 5 s margin")
    check(grace <= pre_s + drain + 60, f"k8s: terminationGracePeriodSeconds {grace} not far above the drain")
    psc, csc = spec.get("securityContext", {}), c.get("securityContext", {})
    check(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "k8s: runAsNonRoot")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    check(uid is not None and uid != 0, "k8s: runAsUser is a non-root uid", str(uid))
    check(csc.get("readOnlyRootFilesystem") is True, "k8s: readOnlyRootFilesystem")
    check(csc.get("allowPrivilegeEscalation") is False, "k8s: allowPrivilegeEscalation false")
    check("ALL" in csc.get("capabilities", {}).get("drop", []), "k8s: drops all capabilities")
    res = c.get("resources", {})
    check({"cpu", "memory"} <= set(res.get("requests", {})) and "memory" in res.get("limits", {}),
          "k8s: cpu/memory requests and a memory limit")
    port_names = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    check(8080 in port_names.values(), "k8s: container port 8080")
    refs = {("cm", e["configMapRef"]["name"]) for e in c.get("envFrom", []) if "configMapRef" in e} | \
           {("sec", e["secretRef"]["name"]) for e in c.get("envFrom", []) if "secretRef" in e}
    check(("cm", cm["metadata"]["name"]) in refs and ("sec", sec["metadata"]["name"]) in refs,
          "k8s: the Deployment takes its env from the ConfigMap and the Secret")
    check("REDIS_URL" in cmdata or "REDIS_URL" in secdata, "k8s: REDIS_URL set (external Redis)")
    for k in ("RELAY_JWT_SECRET", "RELAY_ADMIN_KEY"):
        check(k in secdata and k not in cmdata, f"k8s: {k} in the Secret, not the ConfigMap")
        check("CHANGE-ME" in str(secdata.get(k)), f"k8s: {k} is a marked placeholder, not a real secret")
    check(cmdata.get("RELAY_LISTEN", "").endswith(":8080"), "k8s: RELAY_LISTEN on 8080")
    redis_workloads = [x for x in docs if x["kind"] in ("Deployment", "StatefulSet") and "redis" in x["metadata"]["name"]]
    check(not redis_workloads, "k8s: Redis is external (no Redis workload here)")
    check(svc["spec"]["selector"].items() <= labels.items(), "k8s: Service selects the relay pods")
    check(svc["spec"].get("sessionAffinity", "None") == "None", "k8s: Service has no session affinity")
    tps = [p.get("targetPort") for p in svc["spec"]["ports"]]
    check(all(t in port_names or t in port_names.values() for t in tps), "k8s: Service targetPort is the container port", str(tps))
    tgt = hpa["spec"]["scaleTargetRef"]
    check(tgt["kind"] == "Deployment" and tgt["name"] == dep["metadata"]["name"], "k8s: HPA scales the Deployment")
    check(hpa["spec"].get("minReplicas", 1) >= 2, "k8s: HPA keeps at least 2 replicas")
    check(pdb["spec"]["selector"]["matchLabels"].items() <= labels.items(), "k8s: PDB selects the relay pods")
    mu = pdb["spec"].get("maxUnavailable")
    ma = pdb["spec"].get("minAvailable")
    check((mu is not None and str(mu) not in ("0", "0%")) or (ma is not None and int(str(ma).rstrip("%")) < hpa["spec"].get("minReplicas", 1)),
          "k8s: PDB allows a disruption (drains are possible) while keeping capacity")
    finish()


# ---------------------------------------------------------------------------------- Dockerfile
def global_args(df_text):
    """ARG defaults declared before the first FROM (continuation lines joined)."""
    text = re.sub(r"\\\n", " ", df_text)
    args = {}
    for ln in text.splitlines():
        s = ln.strip()
        if s.upper().startswith("FROM "):
            break
        m = re.match(r"ARG\s+(\w+)=(.*)$", s, re.I)
        if m:
            v = m.group(2).strip()
            args[m.group(1)] = shlex.split(v)[0] if v.startswith(('"', "'")) else v
    return args


def cmd_runtime_packages(path):
    pk = global_args(open(path).read()).get("RUNTIME_PACKAGES", "")
    print(" ".join(pk.split()))


def cmd_dockerfile(path):
    from dockerfile_parse import DockerfileParser
    text = open(path).read()
    dfp = DockerfileParser(path=path)
    instr = [i for i in dfp.structure if i["instruction"] != "COMMENT"]   # parsed instructions
    check(bool(instr), f"Dockerfile: parsed ({len(instr)} instructions)")
    gargs = global_args(text)

    def expand(v):
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: gargs.get(m.group(1) or m.group(2), m.group(0)), v)

    stages, cur = [], None
    for i in instr:
        if i["instruction"] == "FROM":
            cur = {"from": i["value"], "ins": []}
            stages.append(cur)
        elif cur is not None:
            cur["ins"].append(i)
    check(len(stages) >= 2, "Dockerfile: multi-stage", f"{len(stages)} stage(s)")
    if len(stages) < 2:
        finish()
    build, final = stages[0], stages[-1]
    bimg = expand(build["from"].split()[0])
    check(re.fullmatch(r"swift:6(\.\d+)*-bookworm", bimg) is not None, f"Dockerfile: builds on the Swift toolchain image ({bimg})")
    fimg = final["from"].split()[0]
    check(fimg == "debian:bookworm-slim", f"Dockerfile: runs on debian:bookworm-slim ({fimg})")
    bruns = " ".join(i["value"] for i in build["ins"] if i["instruction"] == "RUN")
    # The build's packages are install-deps.sh's (`--build-packages`), which must cover every
    # system-library target's apt provider in Package.swift: the image cannot drift from them.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build_pkgs = subprocess.run(["bash", os.path.join(root, "scripts/install-deps.sh"), "--build-packages"],
                                capture_output=True, text=True, check=True).stdout.split()
    check(len(build_pkgs) > 0, f"install-deps.sh --build-packages lists {len(build_pkgs)} packages")
    manifest = open(os.path.join(root, "Package.swift")).read()
    for p in sorted(set(re.findall(r'\.apt\(\["([^"]+)"\]\)', manifest))):
        check(p in build_pkgs, f"install-deps.sh builds with Package.swift's provider {p}")
    for p in build_pkgs:
        check(re.search(rf"(^|\s){re.escape(p)}(\s|$)", bruns) is not None, f"Dockerfile: build stage installs {p} (install-deps.sh)")
    check(re.search(r"swift build -c release --product stream-relay", bruns) is not None,
          "Dockerfile: swift build -c release --product stream-relay")
    check("runtime-libs.sh --check" in bruns, "Dockerfile: build stage checks RUNTIME_PACKAGES against ldd of the binary")
    check("runtime-libs.sh --swift" in bruns, "Dockerfile: Swift runtime .so files taken from ldd of the binary")
    fruns = " ".join(i["value"] for i in final["ins"] if i["instruction"] == "RUN")
    check("RUNTIME_PACKAGES" in fruns and "apt-get install" in fruns, "Dockerfile: runtime stage installs RUNTIME_PACKAGES")
    check(re.search(r"-dev(\s|$)", fruns) is None and "swift build" not in fruns, "Dockerfile: no -dev packages or toolchain in the runtime stage")
    pk = gargs.get("RUNTIME_PACKAGES", "").split()
    check(len(pk) > 0 and all(re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", p) for p in pk), f"Dockerfile: RUNTIME_PACKAGES lists {len(pk)} Debian package names")
    users = [i["value"].strip() for i in final["ins"] if i["instruction"] == "USER"]
    u = users[-1].split(":")[0] if users else "root"
    check(bool(users) and u not in ("root", "0"), f"Dockerfile: runs as non-root USER ({users[-1] if users else 'none'})")
    hc = [i["value"] for i in final["ins"] if i["instruction"] == "HEALTHCHECK"]
    check(bool(hc) and "/healthz" in hc[-1] and not hc[-1].strip().upper().startswith("NONE"), "Dockerfile: HEALTHCHECK on /healthz")
    exposes = " ".join(i["value"] for i in final["ins"] if i["instruction"] == "EXPOSE").split()
    check("8080" in exposes or "8080/tcp" in exposes, "Dockerfile: EXPOSE 8080")
    envs = dfp.envs        # ENV of the final stage, as parsed
    check(envs.get("RELAY_LISTEN") == "0.0.0.0:8080", "Dockerfile: ENV RELAY_LISTEN=0.0.0.0:8080", str(envs.get("RELAY_LISTEN")))
    copies = [i["value"] for i in final["ins"] if i["instruction"] == "COPY"]
    check(any("--from=" in v and "stream-relay" in v for v in copies), "Dockerfile: runtime stage copies only the built binary from the build stage")
    check(any("--from=" in v and "/usr/lib/swift/linux" in v for v in copies), "Dockerfile: runtime stage copies the Swift runtime libraries")
    ep = [i["value"] for i in final["ins"] if i["instruction"] == "ENTRYPOINT"]
    check(bool(ep) and "stream-relay" in ep[-1], "Dockerfile: ENTRYPOINT is stream-relay")
    finish()


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"nginx-static": cmd_nginx_static, "nginx-smoke": cmd_nginx_smoke, "compose": cmd_compose,
     "k8s": cmd_k8s, "dockerfile": cmd_dockerfile, "runtime-packages": cmd_runtime_packages}[cmd](*args)


if __name__ == "__main__":
    main()
