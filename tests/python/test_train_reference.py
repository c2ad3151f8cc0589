"""docs/training.md checked against `coupler train`: the initial weights drawn exactly as the
document says (bit for bit), then 10 full-batch optimizer steps of AdamW and of SGD with
momentum, with weight decay, an lr schedule with warmup and gradient clipping, reproduced in
float64 numpy from those formulas; coupler's fp32 weights must agree to float rounding.

Run by ctest (tests/python/CMakeLists.txt) with COUPLER_BINARY and COUPLER_SOURCE_DIR set;
needs numpy for /usr/bin/python3 (COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh).
"""

import math
import os
import subprocess
import tempfile
import unittest

SOURCE_DIR = os.environ.get(
    "COUPLER_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COUPLER = os.environ.get("COUPLER_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "coupler"))

try:
    import numpy as np
except ImportError:
    np = None
MISSING = "numpy is missing for /usr/bin/python3: run COUPLER_PYTHON_EXAMPLES=1 scripts/install-deps.sh"

LAYERS = [6, 16, 3]
ROWS = 64
STEPS = 10
MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def initial_weights(seed):
    """docs/training.md, "Initial weights"."""
    state = seed ^ 0x6D6C702D696E6974
    flat = []
    for i in range(len(LAYERS) - 1):
        fan_in, fan_out = LAYERS[i], LAYERS[i + 1]
        last = i + 2 == len(LAYERS)
        bound = np.sqrt(np.float32(6) / np.float32(fan_in + fan_out if last else fan_in))
        w = np.empty(fan_in * fan_out, np.float32)
        for k in range(w.size):
            state, r = splitmix64(state)
            unit = np.float32(r >> 40) * np.float32(2.0 ** -24)
            w[k] = (np.float32(2) * unit - np.float32(1)) * bound
        flat += [w, np.zeros(fan_out, np.float32)]
    return np.concatenate(flat)


def unpack(flat):
    out, at = [], 0
    for i in range(len(LAYERS) - 1):
        w = flat[at:at + LAYERS[i + 1] * LAYERS[i]].reshape(LAYERS[i + 1], LAYERS[i]); at += w.size
        b = flat[at:at + LAYERS[i + 1]]; at += b.size
        out.append((w, b))
    return out


def gradient(flat, x, y):
    """Softmax cross-entropy, the mean over the batch, and its gradient (float64)."""
    params = unpack(flat)
    hs = [x]
    for i, (w, b) in enumerate(params):
        h = hs[-1] @ w.T + b
        hs.append(np.maximum(h, 0) if i + 1 < len(params) else h)
    logits = hs[-1]
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    delta = p.copy()
    delta[np.arange(len(y)), y] -= 1
    delta /= len(y)
    grads = []
    for i in reversed(range(len(params))):
        w, _ = params[i]
        grads.append((delta.T @ hs[i], delta.sum(0)))
        if i > 0:
            delta = (delta @ w) * (hs[i] > 0)
    grads.reverse()
    return np.concatenate([np.concatenate([gw.ravel(), gb]) for gw, gb in grads])


def lr_at(step, lr, warmup, total, min_ratio):
    """docs/training.md, "Learning-rate schedules" (cosine after a linear warmup)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    t = min(1.0, (step - warmup) / (total - warmup))
    return lr * (min_ratio + (1 - min_ratio) * (1 + math.cos(math.pi * t)) / 2)


def reference(init, x, y, optimizer, lr, momentum, wd, warmup, clip):
    w = init.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, STEPS + 1):
        g = gradient(w, x, y)
        if clip > 0:
            norm = np.sqrt((g * g).sum())
            if norm > clip:
                g *= clip / (norm + 1e-6)
        rate = lr_at(t - 1, lr, warmup, STEPS, 0.1) if warmup else lr  # cosine only when set
        if optimizer == "adamw":
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            m_hat = m / (1 - 0.9 ** t)
            v_hat = v / (1 - 0.999 ** t)
            w = w - rate * (m_hat / (np.sqrt(v_hat) + 1e-8) + wd * w)
        else:
            m = momentum * m + g
            w = w - rate * (m + wd * w)
    return w


@unittest.skipIf(np is None, MISSING)
class TrainReferenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="coupler-train-ref-")
        rng = np.random.default_rng(5)
        cls.x = rng.uniform(-2, 2, (ROWS, LAYERS[0])).astype(np.float32)
        cls.y = (cls.x[:, 0] + cls.x[:, 1] > 0).astype(np.int32) + (cls.x[:, 2] > 1).astype(np.int32)
        cls.csv = os.path.join(cls.dir, "data.csv")
        with open(cls.csv, "w") as f:
            f.write(",".join([f"f{i}" for i in range(LAYERS[0])] + ["label"]) + "\n")
            for row, label in zip(cls.x, cls.y):
                f.write(",".join(repr(float(v)) for v in row) + f",{label}\n")

    def train(self, name, settings, extra=()):
        cfg = os.path.join(self.dir, name + ".yaml")
        with open(cfg, "w") as f:
            f.write(f"data: {self.csv}\nlabel_column: label\ntest_fraction: 0\n"
                    f"layers: [{', '.join(map(str, LAYERS))}]\nepochs: {STEPS}\n"
                    f"global_batch: {ROWS}\nmicro_batch: {ROWS}\naccumulate: 1\nseed: 42\n")
            for key, value in settings.items():
                f.write(f"{key}: {value}\n")
        out = os.path.join(self.dir, name + ".npy")
        run = subprocess.run([COUPLER, "train", cfg, "--weights-out", out, *extra],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr)
        return np.load(out)

    def test_initial_weights_are_drawn_as_documented(self):
        got = self.train("init", {}, ["--stop-after-steps", "0"])
        want = initial_weights(42)
        self.assertEqual(got.dtype, np.float32)
        self.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                        "initial weights differ from docs/training.md's recipe")

    def check(self, name, optimizer, momentum, wd, warmup, clip):
        settings = {"optimizer": optimizer, "lr": 0.01, "momentum": momentum, "weight_decay": wd}
        if warmup:
            settings |= {"lr_schedule": "cosine", "warmup_steps": warmup, "lr_min_ratio": 0.1}
        if clip:
            settings["clip_grad_norm"] = clip
        got = self.train(name, settings).astype(np.float64)
        want = reference(initial_weights(42), self.x.astype(np.float64), self.y, optimizer, 0.01,
                         momentum, wd, warmup, clip)
        moved = np.abs(want - initial_weights(42)).max()
        self.assertGreater(moved, 1e-3, "the reference barely moved: a vacuous comparison")
        # fp32 arithmetic against float64: agreement to float rounding, far below a step.
        self.assertLess(np.abs(got - want).max(), 2e-5 + 1e-4 * np.abs(want).max(),
                        f"{name}: coupler's weights after {STEPS} steps differ from the formulas")

    def test_adamw_with_decoupled_weight_decay(self):
        self.check("adamw", "adamw", 0.9, 0.05, 0, 0)

    def test_sgd_with_momentum_and_weight_decay(self):
        self.check("sgd", "sgd", 0.9, 0.05, 0, 0)

    def test_cosine_schedule_warmup_and_clipping(self):
        self.check("schedule", "adamw", 0.9, 0.0, 3, 0.05)


if __name__ == "__main__":
    unittest.main()
