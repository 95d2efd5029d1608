"""reward-model: judges' preferences -> Bradley-Terry R_phi -> versions the trainer shapes with (``koholint serve reward-model``)."""
