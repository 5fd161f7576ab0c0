"""pytorch/examples reinforcement_learning/reinforce.py: a policy network sampling actions from
torch.distributions.Categorical, trained with REINFORCE and Adam.

gym's CartPole is replaced by a small deterministic pole-balancing toy written in NumPy.
"""
import numpy as np

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
import nbtorch.optim as optim
from nbtorch.distributions import Categorical

gamma = 0.99
seed = 543
log_interval = 5


class ToyCartPole:
    """x, x_dot, theta, theta_dot; action 0/1 pushes left/right; done when the pole falls."""

    def reset(self, seed=None):
        rng = np.random.RandomState(seed)
        self.state = rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        theta_acc = 9.8 * np.sin(theta) - 0.05 * force * np.cos(theta)
        x_acc = 0.1 * force - 0.05 * theta_acc * np.cos(theta)
        tau = 0.02
        self.state = np.array([x + tau * x_dot, x_dot + tau * x_acc,
                               theta + tau * theta_dot, theta_dot + tau * theta_acc])
        self.steps += 1
        terminated = bool(abs(self.state[2]) > 0.21 or abs(self.state[0]) > 2.4)
        truncated = self.steps >= 100
        return self.state.astype(np.float32), 1.0, terminated, truncated, {}


env = ToyCartPole()
env.reset(seed=seed)
torch.manual_seed(seed)


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)

        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode():
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


def main():
    running_reward = 10
    for i_episode in range(1, 11):
        state, _ = env.reset(seed=i_episode)
        ep_reward = 0
        for t in range(1, 10000):  # Don't infinite loop while learning
            action = select_action(state)
            state, reward, done, _, _ = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done or t >= 100:
                break

        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        loss = finish_episode()
        if i_episode % log_interval == 0:
            print('Episode {}\tLast reward: {:.2f}\tAverage reward: {:.2f}\tloss {:.5f}'.format(
                  i_episode, ep_reward, running_reward, loss))


if __name__ == '__main__':
    main()
