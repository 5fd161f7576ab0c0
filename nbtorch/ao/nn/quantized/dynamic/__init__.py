"""Dynamically quantized modules: int8 weights, activations quantized per call."""
from .linear import Linear, LinearReLU
from .rnn import LSTM, GRU, LSTMCell, GRUCell, RNNCell

__all__ = ["Linear", "LinearReLU", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]
