"""Real networks (ResNet, MobileNetV2, SqueezeNet, a small BERT) defined in PyTorch for end-to-end tests."""
