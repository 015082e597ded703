#!/usr/bin/env python3
"""The rule groups of the PrometheusRule in a monitoring.yaml, as a Prometheus rule file.

  prometheus_rules.py MONITORING_YAML > rules.yml
"""
import json
import sys

import yaml

rules = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d.get("kind") == "PrometheusRule"]
if len(rules) != 1:
    sys.exit(f"{sys.argv[1]}: {len(rules)} PrometheusRule documents, expected 1")
print(json.dumps({"groups": rules[0]["spec"]["groups"]}, indent=1))
