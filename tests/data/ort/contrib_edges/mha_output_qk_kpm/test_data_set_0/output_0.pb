
floatEBmha_output_qk_kpmJ(9Þ1>¾b=˜Ú>‹†š>ÈOö½€â"¿VñŒ¾)t>ZÄ=´ê?9Bmha_output_qk_kpm_3JƒaÝ>‡@ÆúJ?=±º>åWH¾×V»>