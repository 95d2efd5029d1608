"""The reward model shared by the reward-model service and the trainer: the encoder version
models are tied to, R_phi's numpy inference, and the stored versions' reader and verifier."""
