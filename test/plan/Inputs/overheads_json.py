"""Prints the overheads of a plan.json read from standard input, and checks
that the predicted totals add up (plan_overheads.test)."""
import json
import sys

plan = json.load(sys.stdin)
p = plan["predicted"]
print("currency", plan["hardware"]["currency"])
print("staging_s", round(float(p["staging_s"]), 1))
print("checkpoint_s", round(float(p["checkpoint_s"]), 1))
steps = plan["training"]["steps"]
parts = steps * p["step_time_s"] + p["staging_s"] + p["checkpoint_s"]
if abs(p["time_to_train_s"] - parts) <= 1e-9 * parts:
    print("time_to_train_s = steps x step_time_s + staging_s + checkpoint_s")
if 0 < p["step_time_low_s"] <= p["step_time_s"] <= p["step_time_high_s"]:
    print("step_time_low_s <= step_time_s <= step_time_high_s")
price = plan["hardware"]["gpu_hour_price"]
if price is not None and abs(p["cost"] - p["gpu_hours"] * price) <= 1e-9 * p["cost"]:
    print(f"cost = gpu_hours x {price:g}")
