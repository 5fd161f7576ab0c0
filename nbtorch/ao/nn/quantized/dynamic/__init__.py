"""Dynamically quantized modules: int8 weights, activations quantized per call."""
from .linear import Linear
from .rnn import LSTM, GRU, LSTMCell, GRUCell

__all__ = ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell"]
