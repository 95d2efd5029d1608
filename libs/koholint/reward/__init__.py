"""The reward model shared by the reward-model service and the trainer: R_phi's numpy
inference, its shaping potential, and the stored versions' reader, verifier and hot-loader.
Models are tied to the env's observation layout (``koholint.env.encoding.encoder_version``)."""
