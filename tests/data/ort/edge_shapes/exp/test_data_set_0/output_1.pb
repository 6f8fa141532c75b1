
float164
B
exp_f16_17J"<
?!@?ç@e=iAX0¡4HAj>ADÒ0Ë8ð?w9