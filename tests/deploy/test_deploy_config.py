"""deploy/ checked without a cluster: the Kubernetes manifests against the pinned Kubernetes
version's OpenAPI schemas (kubernetes-validate, strict: unknown fields are errors), the settings
that must agree across the files, and the HAProxy configuration (generator output = committed
file, `haproxy -c`), and the refusals of the deploy scripts' bad arguments.

    .venv/bin/python tests/deploy/test_deploy_config.py --brisvox build/release/brisvox

What is not checked: the ServiceMonitor (a Prometheus Operator CRD: kubernetes-validate ships
only the core schemas, so it is checked here against the few fields it uses), and the Prometheus
Adapter's rules beyond their shape (PromQL is not parsed).
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import kubernetes_validate
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
HAPROXY = os.path.join(ROOT, "deploy", "haproxy")
KUBERNETES_VERSION = "1.33.0"  # the pinned target (docs/DEPLOYMENT.md)
BRISVOX = None


def load(name):
    with open(os.path.join(K8S, name)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    assert len(docs) == 1, f"{name}: one resource per file, found {len(docs)}"
    return docs[0]


def flag_values(args, flag):
    return [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]


class Manifests(unittest.TestCase):
    core = ["deployment.yaml", "service.yaml", "pdb.yaml", "hpa.yaml", "prometheus-adapter-rules.yaml"]

    def test_core_manifests_pass_the_schema_strictly(self):
        for name in self.core:
            with self.subTest(name):
                kubernetes_validate.validate(load(name), KUBERNETES_VERSION, strict=True)

    def test_the_validator_refuses_a_broken_deployment(self):
        # The check above can fail: an unknown field, and a wrong type, are refused.
        for mutate in (lambda d: d["spec"]["template"]["spec"].__setitem__("terminationGracePeriod", 60),
                       lambda d: d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"].__setitem__(
                           "periodSeconds", "two")):
            bad = copy.deepcopy(load("deployment.yaml"))
            mutate(bad)
            with self.assertRaises(kubernetes_validate.ValidationError):
                kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)

    def test_grace_period_covers_prestop_and_drain(self):
        pod = load("deployment.yaml")["spec"]["template"]["spec"]
        c = pod["containers"][0]
        prestop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
        drain = int(flag_values(c["args"], "--drain-timeout-s")[0])
        self.assertGreaterEqual(pod["terminationGracePeriodSeconds"], prestop + drain + 5,
                                "terminationGracePeriodSeconds must cover preStop + --drain-timeout-s + exit")

    def test_probes_use_readyz_and_healthz_on_the_served_port(self):
        c = load("deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(c["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertEqual(c["livenessProbe"]["httpGet"]["path"], "/healthz")
        port = int(flag_values(c["args"], "--port")[0])
        named = {p["name"]: p["containerPort"] for p in c["ports"]}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            self.assertEqual(named[c[probe]["httpGet"]["port"]], port, probe)
        self.assertEqual(flag_values(c["args"], "--host"), ["0.0.0.0"], "a pod must listen beyond loopback")

    def test_serve_flags_exist_in_the_built_binary(self):
        c = load("deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(c["args"][0], "serve")
        help_text = subprocess.run([BRISVOX, "serve", "--help"], capture_output=True, text=True, timeout=30).stdout
        for arg in c["args"][1:]:
            flag = arg.split("=", 1)[0]
            self.assertRegex(help_text, r"(^|\s)" + re.escape(flag) + r"\b", f"{flag} is not a `brisvox serve` option")

    def test_selectors_and_names_agree(self):
        dep, svc, pdb = load("deployment.yaml"), load("service.yaml"), load("pdb.yaml")
        hpa, sm = load("hpa.yaml"), load("servicemonitor.yaml")
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        self.assertEqual(dep["spec"]["selector"]["matchLabels"].items() - pod_labels.items(), set())
        self.assertEqual(svc["spec"]["selector"].items() - pod_labels.items(), set(), "Service selects the pods")
        self.assertEqual(pdb["spec"]["selector"]["matchLabels"].items() - pod_labels.items(), set(), "PDB selects the pods")
        self.assertEqual(sm["spec"]["selector"]["matchLabels"].items() - svc["metadata"]["labels"].items(), set(),
                         "ServiceMonitor selects the Service")
        self.assertIn(sm["spec"]["endpoints"][0]["port"], [p["name"] for p in svc["spec"]["ports"]])
        self.assertEqual(sm["spec"]["endpoints"][0]["path"], "/metrics")
        target = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((target["kind"], target["name"]), ("Deployment", dep["metadata"]["name"]))
        c = dep["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual(svc["spec"]["ports"][0]["targetPort"], c["ports"][0]["name"])

    def test_servicemonitor_shape(self):
        # Not a core kind: kubernetes-validate has no schema for it. The fields it uses, by hand,
        # against the Prometheus Operator's monitoring.coreos.com/v1 ServiceMonitor.
        sm = load("servicemonitor.yaml")
        self.assertEqual((sm["apiVersion"], sm["kind"]), ("monitoring.coreos.com/v1", "ServiceMonitor"))
        self.assertEqual(set(sm) - {"apiVersion", "kind", "metadata", "spec"}, set())
        self.assertEqual(set(sm["spec"]) - {"selector", "endpoints", "namespaceSelector", "jobLabel"}, set())
        for ep in sm["spec"]["endpoints"]:
            self.assertEqual(set(ep) - {"port", "path", "interval", "scrapeTimeout", "scheme"}, set())
            self.assertRegex(ep["interval"], r"^[0-9]+(ms|s|m)$")

    def test_hpa_metrics_come_from_adapter_rules_over_served_metrics(self):
        hpa = load("hpa.yaml")
        rules = yaml.safe_load(load("prometheus-adapter-rules.yaml")["data"]["config.yaml"])["rules"]
        exposed = {r["name"]["as"] for r in rules}
        with open(os.path.join(ROOT, "docs", "PROTOCOL.md")) as f:
            protocol = f.read()
        for r in rules:
            self.assertEqual(set(r) - {"seriesQuery", "resources", "name", "metricsQuery"}, set())
            self.assertIn("<<.LabelMatchers>>", r["metricsQuery"])
            self.assertEqual(r["resources"]["overrides"]["pod"], {"resource": "pod"})
            series = re.match(r"'?([a-z_]+)", r["seriesQuery"]).group(1)
            base = re.sub(r"_bucket$", "", series)
            self.assertIn(f"`{base}", protocol, f"{base} is not a metric brisvox serves (docs/PROTOCOL.md)")
        for m in hpa["spec"]["metrics"]:
            self.assertEqual(m["type"], "Pods")
            self.assertIn(m["pods"]["metric"]["name"], exposed, "an HPA metric without an adapter rule")

    def test_requests_are_set(self):
        res = load("deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["resources"]
        self.assertIn("cpu", res["requests"])
        self.assertIn("memory", res["requests"])


@unittest.skipUnless(shutil.which("haproxy"), "haproxy not installed (scripts/setup.sh installs it)")
class HAProxy(unittest.TestCase):
    example = ["--bind", "0.0.0.0:8700", "10.0.0.11:8700", "10.0.0.12:8700", "10.0.0.13:8700"]

    def render(self, *args):
        return subprocess.run([os.path.join(HAPROXY, "render.sh"), *args], capture_output=True, text=True, timeout=10)

    def test_committed_config_is_the_generator_output(self):
        out = self.render(*self.example)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(os.path.join(HAPROXY, "haproxy.cfg")) as f:
            self.assertEqual(out.stdout, f.read(), "deploy/haproxy/haproxy.cfg: regenerate it with render.sh")

    def test_haproxy_accepts_it(self):
        out = subprocess.run(["haproxy", "-c", "-f", os.path.join(HAPROXY, "haproxy.cfg")], capture_output=True,
                             text=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_the_settings_a_stream_needs(self):
        cfg = self.render(*self.example).stdout
        for line in ("balance leastconn", "http-check send meth GET uri /readyz", "http-check expect status 200",
                     "timeout tunnel 2h", "option redispatch", "retry-on conn-failure empty-response 503",
                     "http-response set-header x-brisvox-replica %s"):
            self.assertIn(line, cfg)
        settings = "\n".join(l for l in cfg.splitlines() if not l.lstrip().startswith("#"))
        self.assertNotIn("shutdown-sessions", settings, "a replica marked down must keep its streams (the drain ends them)")
        self.assertEqual(len(re.findall(r"^    server r\d ", cfg, re.M)), 3)

    def test_bad_arguments_exit_2_with_a_message(self):
        for args, words in (([], "at least one replica"), (["10.0.0.1"], "not ADDR:PORT"),
                            (["--bind"], "--bind needs"), (["--maxconn", "x", "1.2.3.4:1"], "--maxconn needs"), (["--frobnicate", "1.2.3.4:1"], "unknown option")):
            out = self.render(*args)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn(words, out.stderr)

    def test_a_broken_config_is_refused_by_haproxy(self):
        # haproxy -c can fail: a typo in a keyword is an error.
        cfg = self.render(*self.example).stdout.replace("balance leastconn", "balance leastconnz")
        with tempfile.NamedTemporaryFile("w", suffix=".cfg") as f:
            f.write(cfg)
            f.flush()
            out = subprocess.run(["haproxy", "-c", "-f", f.name], capture_output=True, text=True, timeout=10)
        self.assertNotEqual(out.returncode, 0)


class ScriptArguments(unittest.TestCase):
    """Bad arguments of scripts/scale_test.sh, deploy/measure_sizing.sh and the loadtest options the
    scale test uses: exit 2 with a message, before anything is started."""

    def run_script(self, *args):
        return subprocess.run(list(args), capture_output=True, text=True, timeout=30)

    def test_scale_test_refuses_bad_arguments(self):
        script = os.path.join(ROOT, "scripts", "scale_test.sh")
        build = os.path.dirname(BRISVOX)
        for args, words in ((["--streams", "0"], "--streams must be a positive integer"),
                            (["--streams", "4"], "at least 6"),
                            (["--seconds", "5"], "at least 8"),
                            (["--term-at", "9", "--kill-at", "8"], "--term-at < --kill-at < --seconds"),
                            (["--cpu-per-replica", "half"], "--cpu-per-replica must be a number of cores"),
                            (["--cpu-per-replica", "0.01"], "--cpu-per-replica must be a number of cores"),
                            (["--cpu-per-replica", "0.4", "--probe-seconds", "2"], "--probe-seconds must be at least 5"),
                            (["--p99-ms", "0"], "--p99-ms must be a positive integer"),
                            (["--frobnicate"], "unknown argument")):
            out = self.run_script(script, "--build", build, *args)
            self.assertEqual(out.returncode, 2, (args, out.stderr))
            self.assertIn(words, out.stderr)

    def test_measure_sizing_refuses_an_unknown_pipeline(self):
        out = self.run_script(os.path.join(ROOT, "deploy", "measure_sizing.sh"), "--pipeline", "tts")
        self.assertEqual(out.returncode, 2)
        self.assertIn("vad, turn or transcript", out.stderr)

    def test_loadtest_refuses_a_negative_split(self):
        out = self.run_script(BRISVOX, "loadtest", "--url", "ws://127.0.0.1:9", "--split-at-s", "-1")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--split-at-s", out.stderr)

    def test_loadtest_reports_a_first_connect_that_fails(self):
        # --reconnect retries reconnections only: a stream whose first connect is refused fails.
        port = subprocess.run([sys.executable, "-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); "
                               "print(s.getsockname()[1])"], capture_output=True, text=True).stdout.strip()
        out = self.run_script(BRISVOX, "loadtest", "--url", f"ws://127.0.0.1:{port}", "--streams", "2", "--seconds",
                              "1", "--ramp-s", "0", "--grace-s", "1", "--reconnect", "--replica-header",
                              "x-brisvox-replica", "--json")
        self.assertEqual(out.returncode, 1, out.stderr)
        j = json.loads(out.stdout)
        self.assertEqual(j["connection_failures"], 2)
        self.assertEqual(j["reconnects"], 0)
        self.assertEqual(j["replicas"], {})
        self.assertTrue(any(k.startswith("connect:") for k in j["failure_reasons"]), j["failure_reasons"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--brisvox", required=True)
    args, rest = parser.parse_known_args()
    BRISVOX = args.brisvox
    unittest.main(argv=[sys.argv[0], "-v", *rest])
