"""The radio channels' implementations (registered by name in testbed.radio.channels)."""
