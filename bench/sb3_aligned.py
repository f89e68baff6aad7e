"""Stable-Baselines3's PPO set up as nesle.ppo's defaults are, for the benches that put the two
side by side (``ppo_e2e.py`` times it, ``ppo_vs_sb3.py`` scores what it learns).

The same: 64 steps a rollout, 8 minibatches, 4 epochs, Adam at 2.5e-4 annealed linearly, clip
0.1 on the policy and the value, entropy 0.01, value 0.5, gradient norm 0.5, GAE 0.95, gamma
0.99, rewards scaled by the return's running std, RAM observations divided by 255, two hidden
layers of 256 with ReLU. SB3's own: separate policy and value networks (nesle.ppo shares its
trunk) and its RNG streams.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

NUM_STEPS, MINIBATCHES, EPOCHS, LEARNING_RATE = 64, 8, 4, 2.5e-4


def _scaled(venv: Any) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class Scaled(VecEnvWrapper):
        """RAM bytes as floats in [0, 1], as nesle.ppo's agent sees them (SB3 scales only
        image spaces)."""

        def __init__(self, venv: Any) -> None:
            space = gym.spaces.Box(0.0, 1.0, venv.observation_space.shape, np.float32)
            super().__init__(venv, observation_space=space)

        def reset(self) -> np.ndarray:
            return self.venv.reset().astype(np.float32) / 255.0

        def step_wait(self) -> Any:
            obs, reward, done, infos = self.venv.step_wait()
            for info in infos:
                if "terminal_observation" in info:
                    info["terminal_observation"] = info["terminal_observation"].astype(np.float32) / 255.0
            return obs.astype(np.float32) / 255.0, reward, done, infos

    return Scaled(venv)


def make_ppo(num_envs: int, backend: str, seed: int) -> Any:
    """SB3's PPO on ``num_envs`` SMB envs (``nesle.sb3.NesleVecEnv``, RAM observations) of
    ``backend``, its network on the same device; ``model.env`` is the wrapped vector env."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from nesle.sb3 import NesleVecEnv

    venv = NesleVecEnv("smb", num_envs, backend=backend, obs="ram", seed=seed)
    venv = VecNormalize(_scaled(venv), norm_obs=False, norm_reward=True, gamma=0.99)
    return PPO(
        "MlpPolicy", venv, n_steps=NUM_STEPS, batch_size=max(num_envs * NUM_STEPS // MINIBATCHES, 1),
        n_epochs=EPOCHS, learning_rate=lambda left: LEARNING_RATE * left, clip_range=0.1,
        clip_range_vf=0.1, ent_coef=0.01, vf_coef=0.5, max_grad_norm=0.5, gae_lambda=0.95,
        gamma=0.99, seed=seed, verbose=0,
        policy_kwargs={"net_arch": [256, 256], "activation_fn": torch.nn.ReLU},
        device="cuda" if backend == "cuda" else "cpu",
    )  # fmt: skip


def actor(model: Any) -> Any:
    """The trained policy as ``act(obs, generator)``: actions sampled for raw RAM observations."""
    policy = model.policy

    @torch.no_grad()
    def act(obs: np.ndarray, gen: torch.Generator) -> np.ndarray:
        x = torch.as_tensor(obs, dtype=torch.float32, device=policy.device) / 255.0
        logits = policy.get_distribution(x).distribution.logits.cpu()
        return torch.multinomial(logits.softmax(-1), 1, generator=gen).squeeze(-1).numpy()

    return act
