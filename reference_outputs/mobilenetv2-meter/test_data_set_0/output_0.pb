

BlogitsJ(N¯?"Þ¶¿üŠ@lX@OiP@ÿP	@/0@ý–&@y¶[@äo@